package translate

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/model"
)

// defaultLiveness is a Service's endpoint liveness without the annotation.
var defaultLiveness = model.Liveness{
	Interval:   kube.DefaultLivenessInterval,
	Multiplier: kube.DefaultLivenessMultiplier,
	HoldDown:   kube.DefaultLivenessHoldDown,
}

// livenessSyntax says what the annotation may hold, for error messages.
const livenessSyntax = `write "off" or a comma-separated list of interval=DURATION, multiplier=N, hold-down=DURATION, probe=icmp|bfd`

// parseLiveness reads a Service's endpoint-liveness annotation: absent, the
// defaults; "off", off (the zero model.Liveness); otherwise key=value items
// (spaces around items, keys and values ignored), each key at most once,
// the absent keys taking the defaults (probe: icmp). Bounds: interval
// kube.MinLivenessInterval..kube.MaxLivenessInterval, multiplier
// 1..kube.MaxLivenessMultiplier, interval × multiplier at most
// kube.MaxLivenessDetection, hold-down 0..kube.MaxLivenessHoldDown; probe
// icmp or bfd, exactly. An error quotes the annotation and names the key and
// what it accepts.
func parseLiveness(annotations map[string]string) (model.Liveness, error) {
	raw, ok := annotations[kube.AnnotationEndpointLiveness]
	if !ok {
		return defaultLiveness, nil
	}
	l, err := parseLivenessValue(raw)
	if err != nil {
		return model.Liveness{}, fmt.Errorf("%q: %w", raw, err)
	}
	return l, nil
}

func parseLivenessValue(raw string) (model.Liveness, error) {
	if strings.TrimSpace(raw) == "off" {
		return model.Liveness{}, nil
	}
	l := defaultLiveness
	seen := map[string]bool{}
	for _, item := range strings.Split(raw, ",") {
		if strings.TrimSpace(item) == "off" {
			return l, errors.New(`"off" stands alone: it cannot be combined with keys`)
		}
		key, value, ok := strings.Cut(item, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" {
			return l, fmt.Errorf("%q is not key=value: %s", strings.TrimSpace(item), livenessSyntax)
		}
		if seen[key] {
			return l, fmt.Errorf("%s is given twice", key)
		}
		seen[key] = true
		var err error
		switch key {
		case "interval":
			l.Interval, err = parseDurationIn(value, kube.MinLivenessInterval, kube.MaxLivenessInterval)
		case "multiplier":
			l.Multiplier, err = parseIntIn(value, 1, kube.MaxLivenessMultiplier)
		case "hold-down":
			l.HoldDown, err = parseDurationIn(value, 0, kube.MaxLivenessHoldDown)
		case "probe":
			l.Probe, err = parseProbe(value)
		default:
			return l, fmt.Errorf("unknown key %q: the keys are interval, multiplier, hold-down and probe", key)
		}
		if err != nil {
			return l, fmt.Errorf("%s: %w", key, err)
		}
	}
	if d := l.Detection(); d > kube.MaxLivenessDetection {
		return l, fmt.Errorf("interval %s × multiplier %d is %s: the detection time must be at most %s",
			durationText(l.Interval), l.Multiplier, durationText(d), durationText(kube.MaxLivenessDetection))
	}
	return l, nil
}

// parseProbe reads the probe key: icmp (echo answered by the target's
// kernel) or bfd (a session answered by its target side).
func parseProbe(s string) (model.Probe, error) {
	switch s {
	case model.ProbeICMP.String():
		return model.ProbeICMP, nil
	case model.ProbeBFD.String():
		return model.ProbeBFD, nil
	}
	return 0, fmt.Errorf("%q is neither icmp nor bfd", s)
}

// parseDurationIn reads a Go duration ("200ms", "1.5s", "1m") in lo..hi.
func parseDurationIn(s string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (such as 200ms, 1.5s or 1m)", s)
	case d < lo || d > hi:
		return 0, fmt.Errorf("%s is outside %s..%s", durationText(d), durationText(lo), durationText(hi))
	}
	return d, nil
}

// durationText writes d as a user writes it: 10m, not 10m0s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
