package pserver

import (
	"context"
	"sort"
	"strings"
	"sync"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// DefaultTableBuckets is the bucket count of a table whose spec leaves it unset (table.proto's
// advice: many more buckets than shards balance the rows).
const DefaultTableBuckets = 4096

// MaxTableDim is the widest row the contract allows.
const MaxTableDim = 4096

// TableLayout is what routing a table's ids needs: its row width and bucket count.
type TableLayout struct {
	Name    string
	Dim     int
	Buckets uint32
}

// CompleteTableSpec is the spec sent on InitTable: a copy with Buckets filled in (every trainer
// routes with the same count), checked where the client routes by it, so that a bad spec is
// refused before anything is sent: a name with '@' (CLIENT_UNKNOWN_TENSOR), a dim outside
// [1, 4096] or a bucket count that is not a power of two in [1, 2^24] (CLIENT_SHAPE_MISMATCH).
func CompleteTableSpec(spec *pb.TableSpec) (*pb.TableSpec, error) {
	out := proto.Clone(spec).(*pb.TableSpec)
	if out.GetBuckets() == 0 {
		out.Buckets = DefaultTableBuckets
	}
	if err := checkLayout(layoutOf(out)); err != nil {
		return nil, err
	}
	return out, nil
}

func layoutOf(spec *pb.TableSpec) TableLayout {
	return TableLayout{Name: spec.GetName(), Dim: int(spec.GetDim()), Buckets: spec.GetBuckets()}
}

func checkLayout(l TableLayout) error {
	if l.Name == "" || strings.Contains(l.Name, "@") {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_UNKNOWN_TENSOR, nil, "table %q: empty, or holds '@' (not allowed in names)", l.Name)
	}
	if l.Dim < 1 || l.Dim > MaxTableDim {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_SHAPE_MISMATCH, nil, "table %s: dim must be in [1, %d], got %d", l.Name, MaxTableDim, l.Dim)
	}
	if l.Buckets < 1 || l.Buckets > MaxTableBuckets || l.Buckets&(l.Buckets-1) != 0 {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_SHAPE_MISMATCH, nil, "table %s: buckets must be a power of two in [1, 2^24], got %d", l.Name, l.Buckets)
	}
	return nil
}

// tableDirectory holds the tables a client knows (declared at init or listed from the shards)
// and, per table and shard count, the bucket → shard slice: computed once per view shape, then
// every id is routed with one mix and one index. The slice depends only on the table, its buckets
// and the shard count, so a new view with the same shard count (a pserver replaced) reuses it.
type tableDirectory struct {
	mu      sync.Mutex
	layouts map[string]TableLayout
	routes  map[routeKey][]uint32
}

type routeKey struct {
	table      string
	buckets    uint32
	shardCount int
}

func newTableDirectory() *tableDirectory {
	return &tableDirectory{layouts: map[string]TableLayout{}, routes: map[routeKey][]uint32{}}
}

// declare records a table; another layout under a known name replaces it.
func (d *tableDirectory) declare(l TableLayout) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.layouts[l.Name] = l
}

// learn records the tables the shards listed (ListParamsResponse.tables); a listed spec that
// does not route (a newer server's) is left out rather than failing the listing.
func (d *tableDirectory) learn(specs []*pb.TableSpec) {
	for _, spec := range specs {
		if l := layoutOf(spec); checkLayout(l) == nil {
			d.declare(l)
		}
	}
}

func (d *tableDirectory) get(name string) (TableLayout, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.layouts[name]
	return l, ok
}

// all is every known table, by name.
func (d *tableDirectory) all() []TableLayout {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]TableLayout, 0, len(d.layouts))
	for _, l := range d.layouts {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// shardsOf is the shard of each of the table's buckets among shardCount shards.
func (d *tableDirectory) shardsOf(l TableLayout, shardCount int) []uint32 {
	key := routeKey{l.Name, l.Buckets, shardCount}
	d.mu.Lock()
	defer d.mu.Unlock()
	shards, ok := d.routes[key]
	if !ok {
		shards = TableShards(l.Name, l.Buckets, shardCount)
		d.routes[key] = shards
	}
	return shards
}

// Tables is the job's sparse tables (name, dim, buckets) as declared at init or listed from the
// shards, by name; it lists the model when the client knows none.
func (c *Client) Tables(ctx context.Context) ([]TableLayout, error) {
	if len(c.tables.all()) == 0 {
		if _, err := c.ListParams(ctx); err != nil {
			return nil, err
		}
	}
	return c.tables.all(), nil
}

// Lookup reads rows of a table outside a training step (a read numbered 0, like GetParams).
func (c *Client) Lookup(ctx context.Context, table string, ids []int64) ([]float32, error) {
	var out []float32
	err := c.read(ctx, func(s *StepContext) error {
		var err error
		out, err = s.Lookup(table, ids)
		return err
	})
	return out, err
}

// knowTable is the table's layout, listing the model first when the client does not know it.
func (s *StepContext) knowTable(name string) (TableLayout, error) {
	if l, ok := s.client.tables.get(name); ok {
		return l, nil
	}
	if _, err := s.ListParams(); err != nil {
		return TableLayout{}, err
	}
	if l, ok := s.client.tables.get(name); ok {
		return l, nil
	}
	return TableLayout{}, clientError(codes.NotFound, pb.ErrorCode_CLIENT_UNKNOWN_TENSOR, nil, "table %s: neither declared (InitParamsWithTables) nor held by the shards (ListParams)", name)
}
