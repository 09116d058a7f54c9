package pserver

import (
	"context"
	"errors"
	"strings"
	"testing"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
)

func TestAClientThatNeverInitializedListsTheModelAndReadsIt(t *testing.T) {
	fake := newFakePserver()
	writer := fakeClient(t, fake, Options{BlockSize: 4})
	ctx := context.Background()
	adam := &pb.OptimizerConfig{Algorithm: &pb.OptimizerConfig_Adam{Adam: &pb.Adam{}}}
	model := map[string]Tensor{
		"w": Float32s(counting(10)).WithShape(2, 5), // blocks w@0, w@1, w@2
		"b": Float64s([]float64{0.5, 1.5}),          // whole
		"n": Int64s([]int64{7, 8, 9, 10, 11}),       // blocks, stored only
	}
	if err := writer.InitParamsWith(ctx, model, func(string) *pb.OptimizerConfig { return adam }); err != nil {
		t.Fatal(err)
	}

	// An evaluator: the same pserver, no InitParams.
	reader, err := Connect(ctx, Options{Pservers: writer.opts.Pservers, BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	params, err := reader.GetParams(ctx, "w", "b")
	if err != nil {
		t.Fatalf("GetParams without InitParams: %v", err)
	}
	if got := params["w"].Float32s(); len(got) != 10 || got[9] != 9 || !shapesEqual(params["w"].Shape, []uint64{2, 5}) {
		t.Errorf("w = %v shape %v", got, params["w"].Shape)
	}
	if got := params["b"].Float64s(); len(got) != 2 || got[1] != 1.5 {
		t.Errorf("b = %v", got)
	}
	listed, err := reader.ListParams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, n := listed["w"], listed["n"]
	if len(listed) != 3 || w.Type != pb.ElementType_ELEMENT_TYPE_FLOAT32 || w.Length != 10 || !shapesEqual(w.Shape, []uint64{2, 5}) || w.Optimizer.GetAdam() == nil {
		t.Errorf("listed %+v", listed)
	}
	if n.Type != pb.ElementType_ELEMENT_TYPE_INT64 || n.Length != 5 || n.Optimizer != nil {
		t.Errorf("n listed as %+v", n)
	}
	// Learned once: a known tensor is read without listing again.
	lists := fake.lists
	if _, err := reader.GetParams(ctx, "n"); err != nil || fake.lists != lists {
		t.Errorf("GetParams of a listed tensor: %v, %d more listings", err, fake.lists-lists)
	}
	// A pushed gradient is checked against the listed shape.
	err = reader.Step(ctx, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"w": Float32s(counting(10)).WithShape(5, 2)})
		return err
	})
	if !errors.Is(err, ErrClientShapeMismatch) {
		t.Errorf("a transposed gradient of a listed tensor: %v, want CLIENT_SHAPE_MISMATCH", err)
	}
	_, err = reader.GetParams(ctx, "nobody")
	if !errors.Is(err, ErrClientUnknownTensor) {
		t.Errorf("GetParams of a tensor nobody holds: %v, want CLIENT_UNKNOWN_TENSOR", err)
	}
}

func TestAssembleModelChecksTheListingAgainstTheBlockSize(t *testing.T) {
	f32 := pb.ElementType_ELEMENT_TYPE_FLOAT32
	entry := func(name string, elements uint64, shape ...uint64) *pb.ParamSpec {
		return &pb.ParamSpec{Name: name, ElementType: f32, Elements: elements, Shape: shape}
	}
	good := []*pb.ParamSpec{entry("w@1", 4), entry("w@0", 4), entry("w@2", 2), entry("b", 3, 3)}
	model, err := assembleModel(good, 4)
	if err != nil || model["w"].Length != 10 || model["b"].Length != 3 || len(model) != 2 {
		t.Fatalf("assembleModel = %+v, %v", model, err)
	}
	bad := map[string][]*pb.ParamSpec{
		"block 1 missing":          {entry("w@0", 4), entry("w@2", 2)},
		"holds 3 elements":         {entry("w@0", 3), entry("w@1", 2)}, // another block size
		"holds 5 elements":         {entry("w@0", 4), entry("w@1", 5)},
		"not a split tensor":       {entry("w@0", 4)},
		"listed twice":             {entry("w@0", 4), entry("w@0", 4), entry("w@1", 1)},
		"both whole and in blocks": {entry("w", 3), entry("w@0", 4), entry("w@1", 1)},
		"shape [3, 3]":             {entry("w@0", 4, 3, 3), entry("w@1", 1, 3, 3)},
		"block 1 is":               {entry("w@0", 4, 5), entry("w@1", 1)},
	}
	for want, entries := range bad {
		_, err := assembleModel(entries, 4)
		if !errors.Is(err, ErrClientUnknownTensor) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "tensor w") {
			t.Errorf("%s: got %v", want, err)
		}
	}
}
