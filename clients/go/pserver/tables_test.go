package pserver

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

func sgdFor(string) *pb.OptimizerConfig { return sgd }

func idsOf(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

func floatsOf(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func countsOf(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// initTable initializes table emb (dim 2, 16 buckets) on every fake, and tensor w if withTensor.
func initTable(t *testing.T, c *Client, withTensor bool) {
	t.Helper()
	tensors := map[string]Tensor{}
	if withTensor {
		tensors["w"] = Float32s([]float32{1, 2, 3})
	}
	tables := []*pb.TableSpec{{Name: "emb", Dim: 2, Buckets: 16}}
	if err := c.InitParamsWithTables(context.Background(), tensors, sgdFor, tables); err != nil {
		t.Fatal(err)
	}
}

func TestInitTableGoesToEveryShardBeforeFinishWithBucketsFilledIn(t *testing.T) {
	fakes, c := fakeCluster(t, 3, Options{})
	tables := []*pb.TableSpec{{Name: "emb", Dim: 8}}
	if err := c.InitParamsWithTables(context.Background(), map[string]Tensor{"w": Float32s([]float32{1})}, sgdFor, tables); err != nil {
		t.Fatal(err)
	}
	for i, f := range fakes {
		got := f.calls[len(f.calls)-2:]
		if !reflect.DeepEqual(got, []string{"InitTable emb", "FinishInitParams"}) {
			t.Errorf("shard %d: calls %v, want InitTable emb before FinishInitParams", i, f.calls)
		}
		if spec := f.tables["emb"]; spec.GetBuckets() != DefaultTableBuckets || spec.GetDim() != 8 {
			t.Errorf("shard %d: InitTable %v, want dim 8 and %d buckets", i, spec, DefaultTableBuckets)
		}
	}
	if tables[0].GetBuckets() != 0 {
		t.Error("the caller's spec was changed")
	}
	listed, err := c.Tables(context.Background())
	if err != nil || !reflect.DeepEqual(listed, []TableLayout{{Name: "emb", Dim: 8, Buckets: DefaultTableBuckets}}) {
		t.Errorf("Tables() = %v (%v)", listed, err)
	}
}

func TestABadTableSpecIsRefusedBeforeAnythingIsSent(t *testing.T) {
	f := newFakePserver()
	c := fakeClient(t, f, Options{})
	for _, bad := range []struct {
		spec *pb.TableSpec
		want error
	}{
		{&pb.TableSpec{Name: "a@b", Dim: 2}, ErrClientUnknownTensor},
		{&pb.TableSpec{Name: "emb", Dim: 0}, ErrClientShapeMismatch},
		{&pb.TableSpec{Name: "emb", Dim: 4097}, ErrClientShapeMismatch},
		{&pb.TableSpec{Name: "emb", Dim: 2, Buckets: 3}, ErrClientShapeMismatch},
		{&pb.TableSpec{Name: "w", Dim: 2}, ErrClientUnknownTensor}, // a tensor's name
	} {
		err := c.InitParamsWithTables(context.Background(), map[string]Tensor{"w": Float32s([]float32{1})}, sgdFor, []*pb.TableSpec{bad.spec})
		if !errors.Is(err, bad.want) {
			t.Errorf("%v: %v, want %v", bad.spec, err, bad.want)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("calls made: %v", f.calls)
	}
}

func TestLookupReadsEachDistinctIdOnceFromItsShardInRequestOrder(t *testing.T) {
	fakes, c := fakeCluster(t, 3, Options{})
	initTable(t, c, false)
	ids := []int64{5, -1, 5, 1 << 40, 7, -1, 42, 9007199254740993, 7}
	got, err := c.Lookup(context.Background(), "emb", ids)
	if err != nil {
		t.Fatal(err)
	}
	var want []float32
	for _, id := range ids {
		want = append(want, fakeRow(id, 0), fakeRow(id, 1))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Lookup = %v, want %v", got, want)
	}
	routes := TableShards("emb", 16, 3)
	asked := map[int64]int{}
	for shard, f := range fakes {
		if len(f.rowGets) > 1 {
			t.Errorf("shard %d: %d GetRows, want at most one", shard, len(f.rowGets))
		}
		for _, req := range f.rowGets {
			for _, id := range idsOf(req.GetIds()) {
				asked[id]++
				if owner := int(routes[BucketOfID(id, 16)]); owner != shard {
					t.Errorf("id %d asked of shard %d, its bucket is on shard %d", id, shard, owner)
				}
			}
		}
	}
	if len(asked) != 6 {
		t.Errorf("asked for %v, want the 6 distinct ids", asked)
	}
	for id, n := range asked {
		if n != 1 {
			t.Errorf("id %d asked for %d times", id, n)
		}
	}
}

func TestLookupSplitsAShardsIdsIntoCallsUnderHalfTheMessageLimit(t *testing.T) {
	const limit = 64 << 10
	f := newFakePserver()
	c := fakeClient(t, f, Options{MaxMessageBytes: limit})
	tables := []*pb.TableSpec{{Name: "wide", Dim: 64, Buckets: 1}}
	if err := c.InitParamsWithTables(context.Background(), nil, sgdFor, tables); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(i)
	}
	got, err := c.Lookup(context.Background(), "wide", ids)
	if err != nil {
		t.Fatal(err)
	}
	if got[999*64+3] != fakeRow(999, 3) || len(got) != 1000*64 {
		t.Fatalf("row 999 read %v", got[999*64:999*64+4])
	}
	if len(f.rowGets) < 2 {
		t.Fatalf("%d GetRows for 256 KB of rows under a 64 KiB limit", len(f.rowGets))
	}
	seen := 0
	for _, req := range f.rowGets {
		n := len(req.GetIds()) / 8
		if reply := n * 64 * 4; reply >= limit/2 {
			t.Errorf("a call of %d ids: a reply of %d bytes, not under %d", n, reply, limit/2)
		}
		if first := idsOf(req.GetIds())[0]; first != int64(seen) {
			t.Errorf("a call starts at id %d, want %d", first, seen)
		}
		seen += n
	}
	if seen != 1000 {
		t.Errorf("%d ids asked for, want 1000", seen)
	}
}

func TestPushRowsJoinsTheStepsDensePushOncePerShard(t *testing.T) {
	fakes, c := fakeCluster(t, 3, Options{})
	initTable(t, c, true)
	ids := []int64{5, -1, 5, 7}
	grads := []float32{1, 1, 0.5, -0.5, 2, 2, 0.1, 0.2}
	err := c.Step(context.Background(), func(s *StepContext) error {
		if err := s.PushRows("emb", ids, grads, nil); err != nil {
			return err
		}
		if err := s.PushRows("emb", []int64{7, 11}, []float32{0.2, 0.3, 4, 4}, []uint32{3, 1}); err != nil {
			return err
		}
		// The caller may reuse its slices at once: the client copied them.
		ids[0], grads[0] = 99, 99
		_, err := s.SendGrads(map[string]Tensor{"w": Float32s([]float32{1, 1, 1})})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	wantRows := map[int64][]float32{5: {3, 3}, -1: {0.5, -0.5}, 7: {0.1 + float32(0.2), 0.2 + float32(0.3)}, 11: {4, 4}}
	wantCounts := map[int64]uint32{5: 2, -1: 1, 7: 4, 11: 1}
	routes := TableShards("emb", 16, 3)
	gotRows := map[int64][]float32{}
	denseShard := ShardOf("w", 3)
	for shard, f := range fakes {
		wantPushes := 0
		for id := range wantRows {
			if int(routes[BucketOfID(id, 16)]) == shard {
				wantPushes = 1
			}
		}
		if shard == denseShard {
			wantPushes = 1
		}
		if len(f.unary) != wantPushes {
			t.Fatalf("shard %d: %d SendGrads, want %d", shard, len(f.unary), wantPushes)
		}
		if wantPushes == 0 {
			continue
		}
		req := f.unary[0]
		if (len(req.GetGrads()) == 1) != (shard == denseShard) {
			t.Errorf("shard %d: dense %v", shard, req.GetGrads())
		}
		for _, sparse := range req.GetSparse() {
			if sparse.GetTable() != "emb" {
				t.Errorf("shard %d: rows of %s", shard, sparse.GetTable())
			}
			rowIDs, values, counts := idsOf(sparse.GetIds()), floatsOf(sparse.GetGrads()), countsOf(sparse.GetCounts())
			for j, id := range rowIDs {
				if int(routes[BucketOfID(id, 16)]) != shard {
					t.Errorf("id %d sent to shard %d", id, shard)
				}
				if gotRows[id] != nil {
					t.Errorf("id %d sent twice", id)
				}
				gotRows[id] = values[2*j : 2*j+2]
				if counts[j] != wantCounts[id] {
					t.Errorf("id %d: count %d, want %d", id, counts[j], wantCounts[id])
				}
			}
		}
	}
	if !reflect.DeepEqual(gotRows, wantRows) {
		t.Errorf("rows sent %v, want %v (duplicates summed in float32)", gotRows, wantRows)
	}
}

func TestRowsAloneGoOutWhenTheStepReturnsInFirstAppearanceOrder(t *testing.T) {
	f := newFakePserver()
	c := fakeClient(t, f, Options{})
	initTable(t, c, false)
	err := c.Step(context.Background(), func(s *StepContext) error {
		return s.PushRows("emb", []int64{9, 3, 9, 1}, []float32{1, 2, 3, 4, 5, 6, 7, 8}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.unary) != 1 || len(f.unary[0].GetGrads()) != 0 || len(f.unary[0].GetSparse()) != 1 {
		t.Fatalf("pushes %v, want one with the rows alone", f.unary)
	}
	sparse := f.unary[0].GetSparse()[0]
	if ids := idsOf(sparse.GetIds()); !reflect.DeepEqual(ids, []int64{9, 3, 1}) {
		t.Errorf("ids %v, want [9 3 1]", ids)
	}
	if grads := floatsOf(sparse.GetGrads()); !reflect.DeepEqual(grads, []float32{6, 8, 3, 4, 7, 8}) {
		t.Errorf("grads %v", grads)
	}
	if len(sparse.GetCounts()) != 0 {
		t.Errorf("counts %v sent, none were given", sparse.GetCounts())
	}
	// A step that pushes nothing sends nothing.
	if err := c.Step(context.Background(), func(*StepContext) error { return nil }); err != nil || len(f.unary) != 1 {
		t.Errorf("an empty step: %v, %d pushes", err, len(f.unary))
	}
}

func TestPushRowsChecksLengthsAtOnceAndRefusesRowsAfterThePush(t *testing.T) {
	f := newFakePserver()
	c := fakeClient(t, f, Options{})
	initTable(t, c, true)
	err := c.Step(context.Background(), func(s *StepContext) error {
		if err := s.PushRows("emb", []int64{1, 2}, []float32{1, 2, 3}, nil); !errors.Is(err, ErrClientShapeMismatch) {
			t.Errorf("3 values for 2 ids of dim 2: %v", err)
		}
		if err := s.PushRows("emb", []int64{1}, []float32{1, 2}, []uint32{1, 2}); !errors.Is(err, ErrClientShapeMismatch) {
			t.Errorf("2 counts for 1 id: %v", err)
		}
		if err := s.PushRows("nope", []int64{1}, []float32{1, 2}, nil); !errors.Is(err, ErrClientUnknownTensor) {
			t.Errorf("an unknown table: %v", err)
		}
		if _, err := s.SendGrads(map[string]Tensor{"w": Float32s([]float32{1, 1, 1})}); err != nil {
			return err
		}
		err := s.PushRows("emb", []int64{1}, []float32{1, 2}, nil)
		if !errors.Is(err, ErrClientStepFailed) {
			t.Errorf("rows after the push: %v, want CLIENT_STEP_FAILED", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.unary) != 1 || len(f.unary[0].GetSparse()) != 0 {
		t.Errorf("pushes %v, want the dense one only", f.unary)
	}
}

func TestARerunOfAStaleStepSendsItsRowsAgainUnderTheSameIdentity(t *testing.T) {
	f := newFakePserver()
	c := fakeClient(t, f, Options{})
	initTable(t, c, false)
	f.pushFailures = []fakeFailure{{codes.Aborted, "PSERVER_STALE_EPOCH"}}
	var runs []*pb.RequestContext
	err := c.Step(context.Background(), func(s *StepContext) error {
		runs = append(runs, s.RequestContext(0))
		return s.PushRows("emb", []int64{4}, []float32{1, 2}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || len(f.unary) != 1 || len(f.pushFailures) != 0 {
		t.Fatalf("%d runs, %d pushes applied; want 2 runs and the re-run's push", len(runs), len(f.unary))
	}
	req := f.unary[0]
	if !proto.Equal(req.GetContext(), runs[0]) || !proto.Equal(runs[0], runs[1]) ||
		!reflect.DeepEqual(idsOf(req.GetSparse()[0].GetIds()), []int64{4}) {
		t.Errorf("runs stamped %v; the re-run pushed %v", runs, req)
	}
}

func TestATableFullPushIsNotRetried(t *testing.T) {
	f := newFakePserver()
	c := fakeClient(t, f, Options{})
	initTable(t, c, false)
	full := fakeFailure{codes.ResourceExhausted, "PSERVER_TABLE_FULL"}
	f.pushFailures = []fakeFailure{full, full}
	err := c.Step(context.Background(), func(s *StepContext) error {
		return s.PushRows("emb", []int64{4}, []float32{1, 2}, nil)
	})
	if !errors.Is(err, ErrTableFull) || len(f.pushFailures) != 1 {
		t.Errorf("%v after %d attempts, want PSERVER_TABLE_FULL after one", err, 2-len(f.pushFailures))
	}
}

func TestAStreamedPushCarriesTheRowsInSlicesOfWholeRows(t *testing.T) {
	const limit = 64 << 10
	f := newFakePserver()
	c := fakeClient(t, f, Options{MaxMessageBytes: limit})
	tables := []*pb.TableSpec{{Name: "wide", Dim: 64, Buckets: 1}}
	if err := c.InitParamsWithTables(context.Background(), nil, sgdFor, tables); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 500)
	grads := make([]float32, 500*64)
	counts := make([]uint32, 500)
	for i := range ids {
		ids[i], counts[i] = int64(1000-i), uint32(i+1)
		for e := 0; e < 64; e++ {
			grads[i*64+e] = float32(i) + float32(e)/64
		}
	}
	err := c.Step(context.Background(), func(s *StepContext) error {
		return s.PushRows("wide", ids, grads, counts)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.unary) != 0 || len(f.streamed) != 1 {
		t.Fatalf("%d unary, %d streamed pushes; want one streamed", len(f.unary), len(f.streamed))
	}
	var gotIDs []int64
	var gotGrads []float32
	var gotCounts []uint32
	for i, chunk := range f.streamed[0] {
		if (chunk.GetContext() != nil) != (i == 0) {
			t.Errorf("chunk %d: context %v", i, chunk.GetContext())
		}
		for _, slice := range chunk.GetSparse() {
			n := len(slice.GetIds()) / 8
			if len(slice.GetGrads()) != n*64*4 || len(slice.GetCounts()) != n*4 {
				t.Errorf("chunk %d: a slice of %d ids, %d grad bytes, %d count bytes", i, n, len(slice.GetGrads()), len(slice.GetCounts()))
			}
			if proto.Size(chunk) >= limit {
				t.Errorf("chunk %d: %d bytes, over the limit", i, proto.Size(chunk))
			}
			gotIDs = append(gotIDs, idsOf(slice.GetIds())...)
			gotGrads = append(gotGrads, floatsOf(slice.GetGrads())...)
			gotCounts = append(gotCounts, countsOf(slice.GetCounts())...)
		}
	}
	if len(f.streamed[0]) < 2 || !reflect.DeepEqual(gotIDs, ids) || !reflect.DeepEqual(gotGrads, grads) || !reflect.DeepEqual(gotCounts, counts) {
		t.Errorf("%d chunks; the slices put together differ from the rows pushed", len(f.streamed[0]))
	}
}

func TestAClientThatNeverInitializedLearnsTablesFromTheShards(t *testing.T) {
	f := newFakePserver()
	f.tables["emb"] = &pb.TableSpec{Name: "emb", Dim: 3, Buckets: 8}
	c := fakeClient(t, f, Options{})
	got, err := c.Lookup(context.Background(), "emb", []int64{2, 2})
	if err != nil {
		t.Fatal(err)
	}
	row := []float32{fakeRow(2, 0), fakeRow(2, 1), fakeRow(2, 2)}
	if !reflect.DeepEqual(got, append(append([]float32{}, row...), row...)) || f.lists != 1 {
		t.Errorf("Lookup = %v after %d listings", got, f.lists)
	}
	tables, err := c.Tables(context.Background())
	if err != nil || !reflect.DeepEqual(tables, []TableLayout{{Name: "emb", Dim: 3, Buckets: 8}}) || f.lists != 1 {
		t.Errorf("Tables() = %v (%v), %d listings", tables, err, f.lists)
	}
	if _, err := c.Lookup(context.Background(), "other", []int64{1}); !errors.Is(err, ErrClientUnknownTensor) {
		t.Errorf("a table no shard holds: %v", err)
	}
}

func TestSkipWithRowsStagedAndNotSentIsAnError(t *testing.T) {
	fakes, c := fakeCluster(t, 3, Options{})
	initTable(t, c, true)
	err := c.Step(context.Background(), func(s *StepContext) error {
		if err := s.PushRows("emb", []int64{1, 2}, []float32{1, 1, 1, 1}, nil); err != nil {
			return err
		}
		_, err := s.Skip()
		return err
	})
	if !errors.Is(err, ErrClientStepFailed) || !strings.Contains(err.Error(), "PushRows") {
		t.Fatalf("Skip with staged rows: %v, want CLIENT_STEP_FAILED naming PushRows", err)
	}
	for i, f := range fakes {
		if pushes := pushesOf(f); len(pushes) != 0 {
			t.Errorf("shard %d got pushes %v, want none", i, pushes)
		}
	}
}
