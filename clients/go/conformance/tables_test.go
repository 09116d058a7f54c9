//go:build integration

package conformance

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
)

func TestTables(t *testing.T) {
	s := loadScenarios(t)
	sc := s.Tables
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	client := connect(t, ctx, c, "tables")
	specs := make([]*pb.TableSpec, len(sc.Tables))
	for i, raw := range sc.Tables {
		specs[i] = &pb.TableSpec{}
		if err := protojson.Unmarshal(raw, specs[i]); err != nil {
			t.Fatalf("tables[%d]: %v", i, err)
		}
	}
	if err := client.InitParamsWithTables(ctx, nil, nil, specs); err != nil {
		t.Fatal(err)
	}
	emb, gated := specs[0].GetName(), specs[1].GetName()
	probe := parseIDs(t, sc.Probe)

	var read []float32
	err := client.Step(ctx, func(st *pserver.StepContext) error {
		var err error
		if read, err = st.Lookup(emb, probe); err != nil {
			return err
		}
		return st.PushRows(sc.Push.Table, parseIDs(t, sc.Push.IDs), flatten(sc.Push.Grads), nil)
	})
	if err != nil {
		t.Fatalf("step 1: %v", err)
	}
	if got := hexOf(read); got != sc.Expect.InitHex {
		t.Errorf("the probe before any push read %s, want %s", got, sc.Expect.InitHex)
	}
	lookupHex := func(what string) {
		t.Helper()
		after, err := client.Lookup(ctx, emb, probe)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := hexOf(after); got != sc.Expect.AfterHex {
			t.Errorf("%s: the probe read %s, want %s", what, got, sc.Expect.AfterHex)
		}
	}
	lookupHex("after the push")

	for i, want := range sc.Expect.GatedAfter {
		err := client.Step(ctx, func(st *pserver.StepContext) error {
			return st.PushRows(sc.GatedPush.Table, parseIDs(t, sc.GatedPush.IDs), flatten(sc.GatedPush.Grads), nil)
		})
		if err != nil {
			t.Fatalf("gated push %d: %v", i+1, err)
		}
		got, err := client.Lookup(ctx, gated, parseIDs(t, sc.GatedPush.IDs))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("after gated push %d: %v, want %v", i+1, got, want)
		}
	}

	view := client.View()
	buckets := specs[0].GetBuckets()
	shard := int(pserver.TableShards(emb, buckets, view.ShardCount)[pserver.BucketOfID(5, buckets)])
	stub := pb.NewParameterServerClient(dial(t, view.Shard(shard).Address))
	for _, bad := range sc.BadPushes {
		var trailer metadata.MD
		request := &pb.SendGradsRequest{
			Context: &pb.RequestContext{TrainerId: client.TrainerID(), Step: 1000, ShardEpoch: view.Shard(shard).Epoch},
			Sparse:  []*pb.SparseGrad{{Table: bad.Sparse.Table, Ids: unhex(t, bad.Sparse.IdsHex), Grads: unhex(t, bad.Sparse.GradsHex)}},
		}
		_, err := stub.SendGrads(ctx, request, grpc.Trailer(&trailer))
		typed := pserver.FromError(err, trailer)
		if typed == nil {
			t.Errorf("%s: applied, want %s %s", bad.Name, bad.Code, bad.ErrorCode)
			continue
		}
		if typed.Code != bad.Code || !errors.Is(typed, sentinelOf(t, bad.ErrorCode)) {
			t.Errorf("%s: %s %s (%s), want %s %s", bad.Name, typed.Code, typed.ErrorCode, typed.Message, bad.Code, bad.ErrorCode)
		}
	}
	lookupHex("after the bad pushes")

	// A client that never initialized learns the tables from the shards and reads the same rows.
	reader := connect(t, ctx, c, "tables-reader")
	listed, err := reader.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []pserver.TableLayout{
		{Name: emb, Dim: int(specs[0].GetDim()), Buckets: specs[0].GetBuckets()},
		{Name: gated, Dim: int(specs[1].GetDim()), Buckets: specs[1].GetBuckets()},
	}
	if !reflect.DeepEqual(listed, want) {
		t.Errorf("an attached client's tables: %v, want %v", listed, want)
	}
	if got, err := reader.Lookup(ctx, emb, probe); err != nil || hexOf(got) != sc.Expect.AfterHex {
		t.Errorf("an attached client read %s (%v), want %s", hexOf(got), err, sc.Expect.AfterHex)
	}
}

func parseIDs(t *testing.T, values []string) []int64 {
	t.Helper()
	out := make([]int64, len(values))
	for i, v := range values {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("id %q: %v", v, err)
		}
		out[i] = id
	}
	return out
}

func flatten(rows [][]float32) []float32 {
	var out []float32
	for _, row := range rows {
		out = append(out, row...)
	}
	return out
}

// hexOf is the values' float32 little-endian bytes in hex, as the scenarios write rows.
func hexOf(values []float32) string {
	b := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return hex.EncodeToString(b)
}
