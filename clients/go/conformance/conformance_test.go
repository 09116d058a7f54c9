//go:build integration

// Package conformance runs every scenario of proto/testdata/conformance/scenarios.json against a
// real cluster started through the local-cluster CLI, one cluster per scenario.
package conformance

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
)

func TestPlacement(t *testing.T) {
	s := loadScenarios(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot, s.Placement.Vectors))
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		Placement []struct {
			Name      string          `json:"name"`
			Elements  int             `json:"elements"`
			BlockSize int             `json:"block_size"`
			Shards    int             `json:"shards"`
			Blocks    []pserver.Block `json:"blocks"`
		} `json:"placement"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil || len(vectors.Placement) == 0 {
		t.Fatalf("placement vectors: %v", err)
	}
	for _, v := range vectors.Placement {
		got := pserver.PlaceTensor(v.Name, v.Elements, v.BlockSize, v.Shards)
		if !blocksEqual(got, v.Blocks) {
			t.Errorf("PlaceTensor(%q, %d, %d, %d) = %+v, want %+v", v.Name, v.Elements, v.BlockSize, v.Shards, got, v.Blocks)
		}
	}

	// The real cluster holds each block where the client's rule puts it.
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	client := connect(t, ctx, c, "placement")
	values := make([]float32, 10)
	if err := client.InitParams(ctx, map[string]pserver.Tensor{"placed": pserver.Float32s(values)}, sgdAtRate1); err != nil {
		t.Fatal(err)
	}
	view := client.View()
	want := map[int][]string{}
	blocks := pserver.PlaceTensor("placed", len(values), view.BlockSize, view.ShardCount)
	if len(blocks) != 3 {
		t.Fatalf("10 elements at block size %d: %d blocks, want 3", view.BlockSize, len(blocks))
	}
	for _, b := range blocks {
		want[b.Shard] = append(want[b.Shard], b.Name)
	}
	for _, shard := range view.Shards {
		status, err := pb.NewParameterServerClient(dial(t, shard.Address)).GetShardStatus(ctx, &pb.GetShardStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var held []string
		for _, tensor := range status.GetTensors() {
			held = append(held, tensor.GetName())
		}
		sort.Strings(held)
		sort.Strings(want[shard.Index])
		if !stringsEqual(held, want[shard.Index]) {
			t.Errorf("shard %d holds %v, the placement rule says %v", shard.Index, held, want[shard.Index])
		}
	}
}

func TestRoundTrip(t *testing.T) {
	s := loadScenarios(t)
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	client := connect(t, ctx, c, "round-trip")
	tensors := map[string]pserver.Tensor{}
	var names []string
	for _, spec := range s.RoundTrip.Tensors {
		typ := elementType(t, spec.ElementType)
		content := unhex(t, spec.ContentHex)
		if encoded, ok := encode(t, typ, spec.Values); ok && hex.EncodeToString(encoded.Data) != spec.ContentHex {
			t.Errorf("%s: the client encodes %v as %x, want %s", spec.Name, spec.Values, encoded.Data, spec.ContentHex)
		}
		tensors[spec.Name] = pserver.Tensor{Type: typ, Data: content}
		names = append(names, spec.Name)
	}
	// "No optimizer": integer tensors get none; float ones need a rate for plain SGD.
	if err := client.InitParams(ctx, tensors, sgdAtRate1); err != nil {
		t.Fatal(err)
	}
	params, err := client.GetParams(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range s.RoundTrip.Tensors {
		got := params[spec.Name]
		if got.Type != elementType(t, spec.ElementType) || hex.EncodeToString(got.Data) != spec.ContentHex {
			t.Errorf("%s read back as %s %x, want %s %s", spec.Name, got.Type, got.Data, spec.ElementType, spec.ContentHex)
		}
	}
}

// encode builds a tensor from the scenario's decimal values with the client's own encoders; 16-bit
// floats have none (they travel as raw bytes), so ok is false for them.
func encode(t *testing.T, typ pb.ElementType, values []json.RawMessage) (tensor pserver.Tensor, ok bool) {
	t.Helper()
	texts := make([]string, len(values))
	for i, v := range values {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		texts[i] = s
	}
	parse := func(bits int, signed, float bool) []interface{} {
		out := make([]interface{}, len(texts))
		for i, s := range texts {
			var v interface{}
			var err error
			switch {
			case float:
				v, err = strconv.ParseFloat(s, bits)
			case signed:
				v, err = strconv.ParseInt(s, 10, bits)
			default:
				v, err = strconv.ParseUint(s, 10, bits)
			}
			if err != nil {
				t.Fatalf("value %q: %v", s, err)
			}
			out[i] = v
		}
		return out
	}
	switch typ {
	case pb.ElementType_ELEMENT_TYPE_INT32:
		var xs []int32
		for _, v := range parse(32, true, false) {
			xs = append(xs, int32(v.(int64)))
		}
		return pserver.Int32s(xs), true
	case pb.ElementType_ELEMENT_TYPE_UINT32:
		var xs []uint32
		for _, v := range parse(32, false, false) {
			xs = append(xs, uint32(v.(uint64)))
		}
		return pserver.Uint32s(xs), true
	case pb.ElementType_ELEMENT_TYPE_INT64:
		var xs []int64
		for _, v := range parse(64, true, false) {
			xs = append(xs, v.(int64))
		}
		return pserver.Int64s(xs), true
	case pb.ElementType_ELEMENT_TYPE_UINT64:
		var xs []uint64
		for _, v := range parse(64, false, false) {
			xs = append(xs, v.(uint64))
		}
		return pserver.Uint64s(xs), true
	case pb.ElementType_ELEMENT_TYPE_FLOAT32:
		var xs []float32
		for _, v := range parse(32, false, true) {
			xs = append(xs, float32(v.(float64)))
		}
		return pserver.Float32s(xs), true
	case pb.ElementType_ELEMENT_TYPE_FLOAT64:
		var xs []float64
		for _, v := range parse(64, false, true) {
			xs = append(xs, v.(float64))
		}
		return pserver.Float64s(xs), true
	}
	return pserver.Tensor{}, false
}

func TestInitElection(t *testing.T) {
	s := loadScenarios(t)
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	spec := s.InitElection.Tensor
	read := make([][]float32, s.InitElection.Trainers)
	errs := make([]error, s.InitElection.Trainers)
	clients := make([]*pserver.Client, s.InitElection.Trainers)
	for k := range clients {
		clients[k] = connect(t, ctx, c, "elector-"+strconv.Itoa(k))
	}
	var wg sync.WaitGroup
	for k, client := range clients {
		wg.Add(1)
		go func(k int, client *pserver.Client) {
			defer wg.Done()
			proposal := make([]float32, spec.Length)
			for i := range proposal {
				proposal[i] = float32(k + 1)
			}
			if errs[k] = client.InitParams(ctx, map[string]pserver.Tensor{spec.Name: pserver.Float32s(proposal)}, sgdAtRate1); errs[k] != nil {
				return
			}
			params, err := client.GetParams(ctx, spec.Name)
			if errs[k] = err; err == nil {
				read[k] = params[spec.Name].Float32s()
			}
		}(k, client)
	}
	wg.Wait()
	ids := map[uint64]bool{}
	for k, client := range clients {
		if errs[k] != nil {
			t.Fatalf("trainer %d: %v", k, errs[k])
		}
		ids[client.TrainerID()] = true
	}
	if len(ids) != len(clients) {
		t.Errorf("trainer ids %v: not one per trainer", ids)
	}
	winner := int(read[0][0])
	if winner < 1 || winner > len(clients) {
		t.Fatalf("read %v: no trainer's proposal", read[0])
	}
	want := make([]float32, spec.Length)
	for i := range want {
		want[i] = float32(winner)
	}
	for k := range read {
		expectFloat32s(t, "trainer "+strconv.Itoa(k)+" read", read[k], want)
	}
}

func TestStaleEpoch(t *testing.T) {
	s := loadScenarios(t)
	sc := s.StaleEpoch
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	client := connect(t, ctx, c, "stale-epoch")
	name := sc.Tensor.Name
	if err := client.InitParams(ctx, map[string]pserver.Tensor{name: pserver.Float32s(make([]float32, sc.Tensor.Length))}, optimizer(sc.Optimizer)); err != nil {
		t.Fatal(err)
	}
	pushOnce(t, ctx, client, name, sc.Gradient) // step 1: w = 1
	view := client.View()
	shard := pserver.ShardOf(name, view.ShardCount)
	if _, err := pb.NewParameterServerClient(dial(t, view.Shard(shard).Address)).SaveCheckpoint(ctx, &pb.SaveCheckpointRequest{}); err != nil {
		t.Fatalf("SaveCheckpoint: %v", err)
	}
	pushOnce(t, ctx, client, name, sc.Gradient) // step 2: w = 2

	var pulled [][]float32
	var steps []uint64
	var epochs []uint64
	err := client.Step(ctx, func(s *pserver.StepContext) error {
		steps = append(steps, s.Step())
		epochs = append(epochs, s.RequestContext(shard).GetShardEpoch())
		params, err := s.GetParams(name)
		if err != nil {
			return err
		}
		pulled = append(pulled, params[name].Float32s())
		if len(pulled) == 1 {
			c.command("kill-serving " + strconv.Itoa(shard))
		}
		_, err = s.SendGrads(map[string]pserver.Tensor{name: pserver.Float32s(sc.Gradient)})
		return err
	})
	if err != nil {
		t.Fatalf("step 3: %v", err)
	}
	if len(pulled) != sc.Expect.RunsOfStep3 {
		t.Fatalf("step 3 ran %d times, want %d (pulled %v)", len(pulled), sc.Expect.RunsOfStep3, pulled)
	}
	expectFloat32s(t, "pulled in run 1", pulled[0], sc.Expect.PulledInRun1)
	expectFloat32s(t, "pulled in run 2", pulled[1], sc.Expect.PulledInRun2)
	if steps[0] != steps[1] {
		t.Errorf("the re-run of step 3 had step number %d, the first run %d", steps[1], steps[0])
	}
	if epochs[1] <= epochs[0] {
		t.Errorf("the re-run was stamped with epoch %d, the first run %d: want a higher one", epochs[1], epochs[0])
	}
	expectFloat32s(t, "final", readFloat32s(t, ctx, client, name), sc.Expect.Final)
}

func TestDuplicatePush(t *testing.T) {
	s := loadScenarios(t)
	sc := s.DuplicatePush
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	client := connect(t, ctx, c, "duplicate-push")
	name := sc.Tensor.Name
	if err := client.InitParams(ctx, map[string]pserver.Tensor{name: pserver.Float32s(make([]float32, sc.Tensor.Length))}, optimizer(sc.Optimizer)); err != nil {
		t.Fatal(err)
	}
	view := client.View()
	shard := pserver.ShardOf(name, view.ShardCount)
	stub := pb.NewParameterServerClient(dial(t, view.Shard(shard).Address))
	request := &pb.SendGradsRequest{
		Context: &pb.RequestContext{TrainerId: client.TrainerID(), Step: 1, ShardEpoch: view.Shard(shard).Epoch},
		Grads:   []*pb.Tensor{{Name: name, ElementType: pb.ElementType_ELEMENT_TYPE_FLOAT32, Content: pserver.Float32s(sc.Gradient).Data}},
	}
	var outcomes []string
	for range sc.Expect.Outcomes {
		reply, err := stub.SendGrads(ctx, request)
		if err != nil {
			t.Fatalf("SendGrads: %v", err)
		}
		outcomes = append(outcomes, reply.GetOutcome().String())
	}
	if !stringsEqual(outcomes, sc.Expect.Outcomes) {
		t.Errorf("outcomes %v, want %v", outcomes, sc.Expect.Outcomes)
	}
	expectFloat32s(t, "final", readFloat32s(t, ctx, client, name), sc.Expect.Final)
}

func TestBadInput(t *testing.T) {
	s := loadScenarios(t)
	setup := s.BadInput.Setup
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	client := connect(t, ctx, c, "bad-input")
	name := setup.Tensor.Name
	check := func(i int, view pserver.View) {
		bad := s.BadInput.Cases[i]
		var err error
		var trailer metadata.MD
		shard := pserver.ShardOf(bad.To, view.ShardCount)
		rc := &pb.RequestContext{TrainerId: client.TrainerID(), Step: uint64(i + 1), ShardEpoch: view.Shard(shard).Epoch}
		switch bad.RPC {
		case "SendGrads":
			stub := pb.NewParameterServerClient(dial(t, view.Shard(shard).Address))
			_, err = stub.SendGrads(ctx, &pb.SendGradsRequest{Context: rc, Grads: []*pb.Tensor{raw(t, bad.Grad)}}, grpc.Trailer(&trailer))
		case "InitParam":
			stub := pb.NewParameterServerClient(dial(t, view.Shard(shard).Address))
			request := &pb.InitParamRequest{Context: rc, Param: raw(t, bad.Param), Optimizer: optimizer(*bad.Optimizer)}
			_, err = stub.InitParam(ctx, request, grpc.Trailer(&trailer))
		case "GetParams":
			stub := pb.NewParameterServerClient(dial(t, view.Shard(shard).Address))
			_, err = stub.GetParams(ctx, &pb.GetParamsRequest{Context: rc, Names: bad.Names}, grpc.Trailer(&trailer))
		case "SetDataset":
			var request pb.SetDatasetRequest
			if jerr := protojson.Unmarshal(bad.Request, &request); jerr != nil {
				t.Fatalf("%s: request: %v", bad.Name, jerr)
			}
			// Through the client: its typed error, read from the master's trailers.
			_, err = client.SetDataset(ctx, &request)
		default:
			t.Fatalf("%s: unknown rpc %q", bad.Name, bad.RPC)
		}
		typed := pserver.FromError(err, trailer)
		if typed == nil {
			t.Errorf("%s: succeeded, want %s %s", bad.Name, bad.Code, bad.ErrorCode)
			return
		}
		if typed.Code != bad.Code || !errors.Is(typed, sentinelOf(t, bad.ErrorCode)) {
			t.Errorf("%s: %s %s (%s), want %s %s", bad.Name, typed.Code, typed.ErrorCode, typed.Message, bad.Code, bad.ErrorCode)
		}
	}
	// InitParam cases go before the setup (the pserver refuses bad input the same way after
	// it). An empty step waits for a complete view.
	var before pserver.View
	if err := client.Step(ctx, func(s *pserver.StepContext) error { before = s.View(); return nil }); err != nil {
		t.Fatal(err)
	}
	for i, bad := range s.BadInput.Cases {
		if bad.RPC == "InitParam" {
			check(i, before)
		}
	}
	initial := pserver.Float32s(setup.Values).WithShape(setup.Tensor.Shape...)
	if err := client.InitParams(ctx, map[string]pserver.Tensor{name: initial}, optimizer(setup.Optimizer)); err != nil {
		t.Fatal(err)
	}
	for i, bad := range s.BadInput.Cases {
		if bad.RPC != "InitParam" {
			check(i, client.View())
		}
	}
	// Through the client: a trainer that declared the tensor flat cannot tell a flattened
	// gradient from a good one; the pserver can, and its answer is the client's typed error.
	flat := connect(t, ctx, c, "bad-input-flat")
	if err := flat.InitParams(ctx, map[string]pserver.Tensor{name: pserver.Float32s(setup.Values)}, optimizer(setup.Optimizer)); err != nil {
		t.Fatal(err)
	}
	err := flat.Step(ctx, func(s *pserver.StepContext) error {
		_, err := s.SendGrads(map[string]pserver.Tensor{name: pserver.Float32s(setup.Values).WithShape(uint64(len(setup.Values)))})
		return err
	})
	if !errors.Is(err, pserver.ErrShapeMismatch) || pserver.IsRetryable(err) || pserver.IsStale(err) {
		t.Errorf("a flattened gradient through the client: %v, want PSERVER_SHAPE_MISMATCH", err)
	}
	// And a trainer that knows the shape refuses a transposed gradient itself.
	err = client.Step(ctx, func(s *pserver.StepContext) error {
		_, err := s.SendGrads(map[string]pserver.Tensor{name: pserver.Float32s(setup.Values).WithShape(4, 1)})
		return err
	})
	if !errors.Is(err, pserver.ErrClientShapeMismatch) {
		t.Errorf("a transposed gradient through the initializing client: %v, want CLIENT_SHAPE_MISMATCH", err)
	}
	expectFloat32s(t, name+" afterwards", readFloat32s(t, ctx, client, name), setup.Values)
}

func blocksEqual(a, b []pserver.Block) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func stringsEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
