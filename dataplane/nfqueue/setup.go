package nfqueue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// setupTimeout bounds the wait for the kernel's acknowledgement.
const setupTimeout = 5 * time.Second

// configMessage builds the one NFQNL_MSG_CONFIG request that binds the queue
// and sets copy mode PACKET with the copy range, the queue length and the
// flags (GSO or none; never fail-open). The kernel applies the command
// first, then the parameters, in one call.
func configMessage(queue uint16, seq uint32, cfg *config) []byte {
	b := make([]byte, nlmsgHeaderLen+nfgenmsgLen, 128)
	ne, be := binary.NativeEndian, binary.BigEndian
	ne.PutUint16(b[4:], unix.NFNL_SUBSYS_QUEUE<<8|msgConfig)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(b[8:], seq)
	b[16] = unix.AF_UNSPEC
	b[17] = unix.NFNETLINK_V0
	be.PutUint16(b[18:], queue)

	b = appendAttr(b, cfgAttrCmd, []byte{cfgCmdBind, 0, 0, 0}) // pf unused since Linux 3.8
	params := make([]byte, 5)
	be.PutUint32(params, uint32(cfg.copyRange))
	params[4] = copyModePacket
	b = appendAttr(b, cfgAttrParams, params)
	b = appendAttr(b, cfgAttrQueueMax, be.AppendUint32(nil, cfg.queueMaxLen))
	flags := uint32(0)
	if cfg.gso {
		flags = cfgFlagGSO
	}
	// The mask names the flags this request decides: GSO and fail-open,
	// which is thereby cleared (fail closed).
	b = appendAttr(b, cfgAttrMask, be.AppendUint32(nil, cfgFlagGSO|1))
	b = appendAttr(b, cfgAttrFlags, be.AppendUint32(nil, flags))
	ne.PutUint32(b[0:], uint32(len(b)))
	return b
}

// appendAttr appends a netlink attribute padded to 4 bytes.
func appendAttr(b []byte, typ uint16, v []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(attrHeaderLen+len(v)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// configure sends the config request and waits for its acknowledgement.
// Packets the kernel queues meanwhile are dropped right away (fail closed),
// as they may have been copied with the defaults of a fresh queue.
func (q *Queue) configure() error {
	const seq = 1
	msg := configMessage(q.num, seq, &q.cfg)
	if err := q.write(msg); err != nil {
		return fmt.Errorf("nfqueue: queue %d: send config: %w", q.num, err)
	}
	if err := q.file.SetReadDeadline(time.Now().Add(setupTimeout)); err != nil {
		return fmt.Errorf("nfqueue: queue %d: %w", q.num, err)
	}
	defer q.file.SetReadDeadline(time.Time{})
	buf := make([]byte, 64<<10)
	for {
		n, err := q.readOne(buf)
		if err != nil {
			return fmt.Errorf("nfqueue: queue %d: wait for config ack: %w", q.num, err)
		}
		done, err := q.setupDatagram(buf[:n], seq)
		if done {
			if err != nil {
				return fmt.Errorf("nfqueue: queue %d: config: %w", q.num, err)
			}
			return nil
		}
	}
}

// setupDatagram looks for the acknowledgement of seq in one datagram and
// drops any queued packet in it.
func (q *Queue) setupDatagram(d []byte, seq uint32) (done bool, ackErr error) {
	b := newBatch(q.num, 1)
	b.handler = HandlerFunc(func(*Packet, *Verdict) {}) // Drop
	for len(d) > 0 {
		typ, msg, rest, err := splitMessage(d)
		if err != nil {
			break
		}
		d = rest
		switch typ {
		case typePacket:
			b.packet(msg, nil)
		case unix.NLMSG_ERROR:
			errno, s, err := parseError(msg)
			if err == nil && s == seq {
				done = true
				if errno != 0 {
					ackErr = errno
				}
			}
		}
	}
	b.delta.OwnDrops = b.delta.Dropped
	if len(b.out) > 0 {
		if err := q.write(b.out); err != nil {
			b.delta.SendErrors++
		}
	}
	q.stats.add(&b.delta)
	return done, ackErr
}

// readOne reads one datagram, waiting in the runtime poller.
func (q *Queue) readOne(buf []byte) (int, error) {
	var n int
	var rerr error
	err := q.conn.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), buf, 0)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err != nil {
		return 0, err
	}
	return n, rerr
}

// write sends one buffer of netlink messages (not on the hot path).
func (q *Queue) write(b []byte) error {
	var werr error
	err := q.conn.Write(func(fd uintptr) bool {
		werr = nil
		if errno := send(fd, b); errno != 0 {
			werr = errno
			return errno != unix.EAGAIN
		}
		return true
	})
	if err != nil {
		return err
	}
	if werr != nil {
		return os.NewSyscallError("write", werr)
	}
	return nil
}
