package nft

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// QueueMode is how the queue statement is encoded for the kernel.
type QueueMode int

const (
	// QueueNative is the nftables "queue" expression (nft_queue).
	QueueNative QueueMode = iota + 1
	// QueueCompat is the xtables NFQUEUE target, revision 3, via nft_compat.
	QueueCompat
)

// String names the mode as it appears in logs and rule comments.
func (m QueueMode) String() string {
	switch m {
	case QueueNative:
		return "native"
	case QueueCompat:
		return "compat"
	}
	return fmt.Sprintf("QueueMode(%d)", int(m))
}

// xt_NFQUEUE flags (struct xt_NFQ_info_v3).
const xtNFQFlagCPUFanout = 0x2

// queueExpr returns the queue statement for mode. It never sets the bypass
// flag: without a reader the kernel drops the packet.
func queueExpr(mode QueueMode, q QueueRange, fanout bool) expr.Any {
	if mode == QueueNative {
		e := &expr.Queue{Num: q.First, Total: q.Count}
		if fanout {
			e.Flag = expr.QueueFlagFanout
		}
		return e
	}
	// struct xt_NFQ_info_v3 { __u16 queuenum; __u16 queues_total; __u16 flags; }
	// in host byte order, padded to 8 bytes (XT_ALIGN).
	info := make(xt.Unknown, 8)
	binary.NativeEndian.PutUint16(info[0:], q.First)
	binary.NativeEndian.PutUint16(info[2:], q.Count)
	if fanout {
		binary.NativeEndian.PutUint16(info[4:], xtNFQFlagCPUFanout)
	}
	return &expr.Target{Name: "NFQUEUE", Rev: 3, Info: &info}
}

const probeTableName = "sllbrd-probe"

// probeQueueMode finds the queue encoding the kernel accepts by committing a
// transaction that adds a scratch table with a queue rule and deletes it
// again; the kernel rejects the whole transaction when the expression is
// unknown, so nothing is left behind either way.
func probeQueueMode(c Conn) (QueueMode, error) {
	var errs []error
	for _, mode := range []QueueMode{QueueNative, QueueCompat} {
		err := tryQueue(c, mode)
		if err == nil {
			return mode, nil
		}
		errs = append(errs, fmt.Errorf("%s queue: %w", mode, err))
	}
	return 0, fmt.Errorf("kernel accepts no queue statement: %v", errs)
}

func tryQueue(c Conn, mode QueueMode) error {
	t := &nftables.Table{Name: probeTableName, Family: nftables.TableFamilyINet}
	c.AddTable(t)
	ch := c.AddChain(&nftables.Chain{
		Name: "probe", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityRaw,
	})
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
		queueExpr(mode, QueueRange{First: 0, Count: 1}, false),
	}})
	c.DelTable(t)
	return c.Flush()
}
