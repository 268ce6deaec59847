package bfd

import (
	"math/rand/v2"
	"time"
)

// Timer rules of RFC 5880 sections 6.8.2 to 6.8.4 and 6.8.7, as pure
// functions of the session variables.

// txInterval is the negotiated transmit interval: the larger of our Desired
// Min TX in effect and the peer's Required Min RX (RFC 5880 section 6.8.2).
func txInterval(effTx, remoteMinRx time.Duration) time.Duration {
	return max(effTx, remoteMinRx)
}

// detectionTime is the asynchronous-mode Detection Time (RFC 5880 section
// 6.8.4): the peer's Detect Mult times the larger of our Required Min RX in
// effect and the peer's last Desired Min TX. Zero before the peer is heard.
func detectionTime(remoteMult uint8, effRx, remoteMinTx time.Duration) time.Duration {
	return time.Duration(remoteMult) * max(effRx, remoteMinTx)
}

// jittered returns the delay to the next periodic transmission: interval
// reduced by a random 0-25%, or by 10-25% when our Detect Mult is 1 (RFC 5880
// section 6.8.7: "the interval MUST be reduced by a random value of 0 to 25%"
// and, with bfd.DetectMult 1, "MUST be no more than 90% ... and MUST be no
// less than 75%").
func jittered(rng *rand.Rand, interval time.Duration, detectMult uint8) time.Duration {
	lo := interval * 75 / 100
	hi := interval
	if detectMult == 1 {
		hi = interval * 90 / 100
	}
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}
