package nft

import (
	"fmt"

	"github.com/google/nftables"
)

// Conn is the subset of *nftables.Conn that the Programmer uses: the kernel
// boundary. Queued operations take effect atomically on Flush.
type Conn interface {
	AddTable(t *nftables.Table) *nftables.Table
	DelTable(t *nftables.Table)
	AddChain(c *nftables.Chain) *nftables.Chain
	FlushChain(c *nftables.Chain)
	DelChain(c *nftables.Chain)
	AddSet(s *nftables.Set, vals []nftables.SetElement) error
	FlushSet(s *nftables.Set)
	DelSet(s *nftables.Set)
	SetAddElements(s *nftables.Set, vals []nftables.SetElement) error
	SetDeleteElements(s *nftables.Set, vals []nftables.SetElement) error
	AddRule(r *nftables.Rule) *nftables.Rule
	AddObj(o nftables.Obj) nftables.Obj
	DeleteObject(o nftables.Obj)
	Flush() error
	FlushWithGenID(genID uint32) error
	GetGen() (*nftables.Gen, error)
	ListTablesOfFamily(family nftables.TableFamily) ([]*nftables.Table, error)
	ListChainsOfTableFamily(family nftables.TableFamily) ([]*nftables.Chain, error)
	GetSets(t *nftables.Table) ([]*nftables.Set, error)
	GetSetElements(s *nftables.Set) ([]nftables.SetElement, error)
	GetRules(t *nftables.Table, c *nftables.Chain) ([]*nftables.Rule, error)
	GetNamedObjects(t *nftables.Table) ([]nftables.Obj, error)
}

var _ Conn = (*nftables.Conn)(nil)

// Programmer owns one nftables table. It is not safe for concurrent use.
type Programmer struct {
	conn    Conn
	entries EntryConn // nil: entry changes go through conn like the rest
	table   string
	mode    QueueMode
	// What the table held after our last commit, and the ruleset
	// generation it was committed as: while the generation is unchanged
	// nobody else changed any table, and the next Program diffs against
	// it instead of reading the table back.
	cache    *tableState
	cacheGen uint32
}

type options struct {
	table   string
	mode    QueueMode
	entries EntryConn
}

// Option configures New.
type Option func(*options)

// WithTableName sets the name of our inet table (default DefaultTableName).
func WithTableName(name string) Option { return func(o *options) { o.table = name } }

// WithQueueMode skips the kernel probe and uses mode.
func WithQueueMode(mode QueueMode) Option { return func(o *options) { o.mode = mode } }

// WithEntryConn commits the changes that touch nothing but entries of
// entry maps through c (see EntryConn).
func WithEntryConn(c EntryConn) Option { return func(o *options) { o.entries = c } }

// New returns a Programmer using conn, probing the queue encoding unless
// WithQueueMode is given. It does not touch our table.
func New(conn Conn, opts ...Option) (*Programmer, error) {
	o := options{table: DefaultTableName}
	for _, opt := range opts {
		opt(&o)
	}
	if o.table == "" || o.table == probeTableName {
		return nil, fmt.Errorf("%w: table name %q", ErrInvalidConfig, o.table)
	}
	if o.mode == 0 {
		m, err := probeQueueMode(conn)
		if err != nil {
			return nil, fmt.Errorf("probe queue statement: %w", err)
		}
		o.mode = m
	}
	return &Programmer{conn: conn, entries: o.entries, table: o.table, mode: o.mode}, nil
}

// Mode reports the queue encoding in use.
func (p *Programmer) Mode() QueueMode { return p.mode }

// Program makes our table match cfg in one transaction (see the package
// documentation): the table is rebuilt when its base chains or base sets
// differ from cfg's, otherwise only the elements, chains, sets and
// counters that differ are added, replaced or deleted.
func (p *Programmer) Program(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	want := buildDesired(newLayout(p.table, p.mode, cfg))
	gen, err := p.conn.GetGen()
	if err != nil {
		return fmt.Errorf("read the ruleset generation: %w", err)
	}
	current := p.cache
	if current == nil || gen.ID != p.cacheGen {
		if current, err = readState(p.conn, want.l.table); err != nil {
			p.cache = nil
			return fmt.Errorf("read table inet %s: %w", p.table, err)
		}
	}
	fits := current != nil && compatible(want, current)
	if fits && p.entries != nil {
		if tx, ok := entryChanges(want, current); ok && len(tx.Maps) > 0 {
			return p.commitEntries(gen.ID, want, tx)
		}
	}
	ops, err := p.queue(want, current, fits)
	if err != nil {
		p.cache = nil
		discard(p.conn, gen.ID)
		return fmt.Errorf("table inet %s: %w", p.table, err)
	}
	if ops == 0 {
		p.cache, p.cacheGen = want.state(), gen.ID
		return nil
	}
	p.cache = nil
	if err := p.conn.FlushWithGenID(gen.ID); err != nil {
		return fmt.Errorf("commit table inet %s: %w", p.table, err)
	}
	p.cacheCommitted(gen.ID, want)
	return nil
}

// commitEntries commits tx, which turns the table into want.
func (p *Programmer) commitEntries(gen uint32, want *desired, tx *EntryTx) error {
	p.cache = nil
	if err := p.entries.CommitEntries(gen, tx); err != nil {
		return fmt.Errorf("commit %d entries of table inet %s: %w", tx.elements(), p.table, err)
	}
	if after, ok := p.cacheCommitted(gen, want); ok && after == gen {
		return fmt.Errorf("commit %d entries of table inet %s: the ruleset generation did not change", tx.elements(), p.table)
	}
	return nil
}

// cacheCommitted reads the ruleset generation after our commit made at
// generation gen and, when nothing else committed in between, keeps want
// as what the table holds. ok is false when the generation cannot be read
// (the next Program then reads the table back).
func (p *Programmer) cacheCommitted(gen uint32, want *desired) (after uint32, ok bool) {
	g, err := p.conn.GetGen()
	if err != nil {
		return 0, false
	}
	if g.ID == gen+1 {
		p.cache, p.cacheGen = want.state(), g.ID
	}
	return g.ID, true
}

// queue queues on the connection what turns current into want and returns
// how many operations it queued: the whole table again unless current fits
// (is compatible with want).
func (p *Programmer) queue(want *desired, current *tableState, fits bool) (int, error) {
	if !fits {
		t := want.l.table
		p.conn.AddTable(t) // so that DelTable cannot fail on absence
		p.conn.DelTable(t)
		return 1, want.addAll(p.conn)
	}
	return queueChanges(p.conn, want, current)
}

// Chains reads our table and returns its chains with their rules' comments
// (nil when the table does not exist): what a previous run left, to adopt.
func (p *Programmer) Chains() (map[string][]string, error) {
	st, err := readState(p.conn, &nftables.Table{Name: p.table, Family: nftables.TableFamilyINet})
	if err != nil || st == nil {
		return nil, err
	}
	out := make(map[string][]string, len(st.chains))
	for name, c := range st.chains {
		out[name] = c.comments
	}
	return out, nil
}

// Cleanup deletes our table; it succeeds when the table is absent.
func (p *Programmer) Cleanup() error {
	p.cache = nil
	t := &nftables.Table{Name: p.table, Family: nftables.TableFamilyINet}
	p.conn.AddTable(t)
	p.conn.DelTable(t)
	if err := p.conn.Flush(); err != nil {
		return fmt.Errorf("delete table inet %s: %w", p.table, err)
	}
	return nil
}
