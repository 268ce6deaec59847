package nft

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/userdata"
)

// Conn is the subset of *nftables.Conn that the Programmer uses: the kernel
// boundary. Queued operations take effect atomically on Flush.
type Conn interface {
	AddTable(t *nftables.Table) *nftables.Table
	DelTable(t *nftables.Table)
	AddChain(c *nftables.Chain) *nftables.Chain
	AddSet(s *nftables.Set, vals []nftables.SetElement) error
	FlushSet(s *nftables.Set)
	SetAddElements(s *nftables.Set, vals []nftables.SetElement) error
	AddRule(r *nftables.Rule) *nftables.Rule
	Flush() error
	ListTablesOfFamily(family nftables.TableFamily) ([]*nftables.Table, error)
	ListChainsOfTableFamily(family nftables.TableFamily) ([]*nftables.Chain, error)
	GetSets(t *nftables.Table) ([]*nftables.Set, error)
	GetRules(t *nftables.Table, c *nftables.Chain) ([]*nftables.Rule, error)
}

var _ Conn = (*nftables.Conn)(nil)

// Programmer owns one nftables table. It is not safe for concurrent use.
type Programmer struct {
	conn  Conn
	table string
	mode  QueueMode
}

type options struct {
	table string
	mode  QueueMode
}

// Option configures New.
type Option func(*options)

// WithTableName sets the name of our inet table (default DefaultTableName).
func WithTableName(name string) Option { return func(o *options) { o.table = name } }

// WithQueueMode skips the kernel probe and uses mode.
func WithQueueMode(mode QueueMode) Option { return func(o *options) { o.mode = mode } }

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
	return &Programmer{conn: conn, table: o.table, mode: o.mode}, nil
}

// Mode reports the queue encoding in use.
func (p *Programmer) Mode() QueueMode { return p.mode }

// Program makes our table match cfg in one transaction: only the VIP sets
// are rewritten when the rest already matches, otherwise the table is
// replaced as a whole.
func (p *Programmer) Program(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l := newLayout(p.table, p.mode, cfg)
	v4, v6 := cfg.splitVIPs()
	same, err := p.matches(l)
	if err != nil {
		return fmt.Errorf("read table inet %s: %w", p.table, err)
	}
	if same {
		err = p.replaceElements(l, v4, v6)
	} else {
		p.conn.AddTable(l.table) // so that DelTable cannot fail on absence
		p.conn.DelTable(l.table)
		err = l.addAll(p.conn, v4, v6)
	}
	if err != nil {
		return fmt.Errorf("table inet %s: %w", p.table, err)
	}
	if err := p.conn.Flush(); err != nil {
		return fmt.Errorf("commit table inet %s: %w", p.table, err)
	}
	return nil
}

func (p *Programmer) replaceElements(l *layout, v4, v6 []netip.Addr) error {
	for _, s := range []struct {
		set   *nftables.Set
		addrs []netip.Addr
	}{{l.set4, v4}, {l.set6, v6}} {
		p.conn.FlushSet(s.set)
		if len(s.addrs) == 0 {
			continue
		}
		if err := p.conn.SetAddElements(s.set, elements(s.addrs)); err != nil {
			return fmt.Errorf("set %s: %w", s.set.Name, err)
		}
	}
	return nil
}

// Cleanup deletes our table; it succeeds when the table is absent.
func (p *Programmer) Cleanup() error {
	t := &nftables.Table{Name: p.table, Family: nftables.TableFamilyINet}
	p.conn.AddTable(t)
	p.conn.DelTable(t)
	if err := p.conn.Flush(); err != nil {
		return fmt.Errorf("delete table inet %s: %w", p.table, err)
	}
	return nil
}

// matches reports whether the kernel's table has exactly l's sets, chains
// and rules (rules compared by their comments).
func (p *Programmer) matches(l *layout) (bool, error) {
	tables, err := p.conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("list tables: %w", err)
	}
	if !slices.ContainsFunc(tables, func(t *nftables.Table) bool { return t.Name == l.table.Name }) {
		return false, nil
	}
	if ok, err := p.setsMatch(l); !ok || err != nil {
		return false, err
	}
	chains, err := p.conn.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("list chains: %w", err)
	}
	chains = slices.DeleteFunc(chains, func(c *nftables.Chain) bool { return c.Table.Name != l.table.Name })
	if len(chains) != len(l.chains) {
		return false, nil
	}
	for _, want := range l.chains {
		i := slices.IndexFunc(chains, func(c *nftables.Chain) bool { return sameChain(c, want.chain) })
		if i < 0 {
			return false, nil
		}
		if ok, err := p.rulesMatch(l, want); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

func (p *Programmer) setsMatch(l *layout) (bool, error) {
	sets, err := p.conn.GetSets(l.table)
	if err != nil {
		return false, fmt.Errorf("list sets: %w", err)
	}
	if len(sets) != 2 {
		return false, nil
	}
	for _, want := range []*nftables.Set{l.set4, l.set6} {
		if !slices.ContainsFunc(sets, func(s *nftables.Set) bool {
			return s.Name == want.Name && s.KeyType.Name == want.KeyType.Name &&
				!s.Interval && !s.IsMap && !s.Constant && !s.HasTimeout
		}) {
			return false, nil
		}
	}
	return true, nil
}

func (p *Programmer) rulesMatch(l *layout, want chainSpec) (bool, error) {
	rules, err := p.conn.GetRules(l.table, want.chain)
	if err != nil {
		return false, fmt.Errorf("list rules of chain %s: %w", want.chain.Name, err)
	}
	if len(rules) != len(want.rules) {
		return false, nil
	}
	for i, r := range rules {
		got, _ := userdata.GetString(r.UserData, userdata.TypeComment)
		if got != l.comment(want.rules[i].name) {
			return false, nil
		}
	}
	return true, nil
}

func sameChain(got, want *nftables.Chain) bool {
	return got.Name == want.Name && got.Type == want.Type &&
		got.Hooknum != nil && *got.Hooknum == *want.Hooknum &&
		got.Priority != nil && *got.Priority == *want.Priority &&
		(got.Policy == nil || *got.Policy == nftables.ChainPolicyAccept)
}
