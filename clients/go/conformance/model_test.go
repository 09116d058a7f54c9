//go:build integration

package conformance

import (
	"math"
	"reflect"
	"testing"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
)

func TestDefaultLearningRate(t *testing.T) {
	s := loadScenarios(t)
	sc := s.DefaultLearningRate
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	client := connect(t, ctx, c, "default-learning-rate")
	name := sc.Tensor.Name
	initial := pserver.Float32s(sc.Values).WithShape(sc.Tensor.Shape...)
	if err := client.InitParams(ctx, map[string]pserver.Tensor{name: initial}, optimizer(sc.Optimizer)); err != nil {
		t.Fatal(err)
	}
	pushOnce(t, ctx, client, name, sc.Gradient)
	for i, v := range readFloat32s(t, ctx, client, name) {
		if math.Abs(float64(v)-sc.Expect.After) > sc.Expect.Tolerance {
			t.Errorf("%s[%d] = %v after one push, want %v ± %v (Adam's default rate)", name, i, v, sc.Expect.After, sc.Expect.Tolerance)
		}
	}
	listed, err := client.ListParams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rate := listed[name].Optimizer.GetLearningRate()
	if rate == nil || rate.GetBase() != sc.Expect.ListedLearningRate || listed[name].Optimizer.GetAdam() == nil {
		t.Errorf("%s listed with optimizer %v, want Adam at learning rate %v", name, listed[name].Optimizer, sc.Expect.ListedLearningRate)
	}
}

func TestAttach(t *testing.T) {
	s := loadScenarios(t)
	sc := s.Attach
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	trainer := connect(t, ctx, c, "attach-trainer")
	tensors := map[string]pserver.Tensor{}
	var names []string
	for _, spec := range sc.Tensors {
		var tensor pserver.Tensor
		switch typ := elementType(t, spec.ElementType); typ {
		case pb.ElementType_ELEMENT_TYPE_FLOAT32:
			values := make([]float32, len(spec.Values))
			for i, v := range spec.Values {
				values[i] = float32(v)
			}
			tensor = pserver.Float32s(values)
		case pb.ElementType_ELEMENT_TYPE_FLOAT64:
			tensor = pserver.Float64s(spec.Values)
		default:
			t.Fatalf("%s: element type %s", spec.Name, typ)
		}
		tensors[spec.Name] = tensor.WithShape(spec.Shape...)
		names = append(names, spec.Name)
	}
	if err := trainer.InitParams(ctx, tensors, optimizer(sc.Optimizer)); err != nil {
		t.Fatal(err)
	}
	view := trainer.View()
	for _, name := range names {
		if blocks := pserver.PlaceTensor(name, tensors[name].Len(), view.BlockSize, view.ShardCount); len(blocks) < 2 {
			t.Fatalf("%s is one block at block size %d: the scenario wants blocks", name, view.BlockSize)
		}
	}

	// A reader that never initialized reads both tensors by name: GetParams lists the model.
	reader := connect(t, ctx, c, "attach-reader")
	params, err := reader.GetParams(ctx, names...)
	if err != nil {
		t.Fatalf("GetParams without InitParams: %v", err)
	}
	for _, name := range names {
		got, want := params[name], tensors[name]
		if got.Type != want.Type || !reflect.DeepEqual(got.Data, want.Data) || !reflect.DeepEqual(got.Shape, want.Shape) {
			t.Errorf("%s read back as %s %v %x, want %s %v %x", name, got.Type, got.Shape, got.Data, want.Type, want.Shape, want.Data)
		}
	}

	// Another one lists the model.
	lister := connect(t, ctx, c, "attach-lister")
	listed, err := lister.ListParams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range sc.Expect.Listed {
		got, ok := listed[name]
		if !ok {
			t.Errorf("%s not listed (listed: %v)", name, listed)
			continue
		}
		if got.Type != elementType(t, want.ElementType) || !reflect.DeepEqual(got.Shape, want.Shape) ||
			got.Length != tensors[name].Len() || got.Optimizer.GetLearningRate().GetBase() != want.LearningRate {
			t.Errorf("%s listed as %s %v, %d elements, rate %v; want %s %v, %d, rate %v", name, got.Type, got.Shape, got.Length,
				got.Optimizer.GetLearningRate().GetBase(), want.ElementType, want.Shape, tensors[name].Len(), want.LearningRate)
		}
	}
}
