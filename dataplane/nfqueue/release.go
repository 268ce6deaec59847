package nfqueue

import "fmt"

// Release gives the verdict (Accept or Drop) for a packet the Handler held
// earlier. It may be called from the Handler itself or from any other
// goroutine (e.g. a timer): while the reader is inside a batch the verdict
// joins that batch's sendmsg, otherwise Release sends it at once. An id the
// kernel does not know (already released, or the queue was rebound) is
// counted in Stats.VerdictErrors when the kernel's error arrives.
func (q *Queue) Release(id uint32, v Verdict) error {
	if v.Action != Accept && v.Action != Drop {
		return errHoldRelease
	}
	d := Stats{Released: 1}
	if v.Action == Accept {
		d.Accepted = 1
	} else {
		d.Dropped = 1
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.released = appendVerdict(q.released, q.num, id, &v)
	if q.inBatch {
		q.stats.add(&d)
		return nil
	}
	err := q.write(q.released)
	q.released = q.released[:0]
	if err != nil {
		q.stats.add(&Stats{SendErrors: 1})
		return fmt.Errorf("nfqueue: queue %d: release %d: %w", q.num, id, err)
	}
	q.stats.add(&d)
	return nil
}
