package pserver

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
)

// clippingVector is one vector of proto/testdata/clipping.json: every client checks itself
// against them (proto/README.md, "Global-norm clipping").
type clippingVector struct {
	Title   string  `json:"title"`
	MaxNorm float64 `json:"maxNorm"`
	Norm    float64 `json:"norm"`
	Clipped bool    `json:"clipped"`
	Grads   []struct {
		Name        string `json:"name"`
		ElementType string `json:"elementType"`
		ContentHex  string `json:"contentHex"`
		ClippedHex  string `json:"clippedHex"`
	} `json:"grads"`
}

func clippingVectors(t *testing.T) []clippingVector {
	t.Helper()
	raw, err := os.ReadFile("../../../proto/testdata/clipping.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Vectors []clippingVector `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Vectors) == 0 {
		t.Fatalf("clipping.json: %v, %d vectors", err, len(doc.Vectors))
	}
	return doc.Vectors
}

// gradsOf is the vector's gradients as tensors.
func gradsOf(t *testing.T, v clippingVector) map[string]Tensor {
	t.Helper()
	grads := map[string]Tensor{}
	for _, g := range v.Grads {
		data, err := hex.DecodeString(g.ContentHex)
		if err != nil {
			t.Fatal(err)
		}
		grads[g.Name] = Tensor{Type: pb.ElementType(pb.ElementType_value[g.ElementType]), Data: data}
	}
	return grads
}

func TestClippingIsTheSharedVectorsBitForBit(t *testing.T) {
	for _, v := range clippingVectors(t) {
		grads := gradsOf(t, v)
		if norm := globalNorm(grads); norm != v.Norm {
			t.Errorf("%s: norm %v (%x), want %v (%x)", v.Title, norm, math.Float64bits(norm), v.Norm, math.Float64bits(v.Norm))
		}
		clipped := clipByGlobalNorm(grads, v.MaxNorm)
		for _, g := range v.Grads {
			if got := hex.EncodeToString(clipped[g.Name].Data); got != g.ClippedHex {
				t.Errorf("%s: %s clipped to %s, want %s", v.Title, g.Name, got, g.ClippedHex)
			}
			// The caller's gradient is left as it was.
			if got := hex.EncodeToString(grads[g.Name].Data); got != g.ContentHex {
				t.Errorf("%s: %s changed to %s", v.Title, g.Name, got)
			}
		}
	}
}

func TestAStepPushesItsGradientsClippedTogether(t *testing.T) {
	var vector clippingVector
	for _, v := range clippingVectors(t) {
		if strings.HasPrefix(v.Title, "float32 and float64 together") {
			vector = v
		}
	}
	grads := gradsOf(t, vector)
	fake := newFakePserver()
	c := fakeClient(t, fake, Options{BlockSize: 1 << 10, GlobalClipNorm: vector.MaxNorm})
	ctx := context.Background()
	model := map[string]Tensor{}
	for name, g := range grads {
		model[name] = Tensor{Type: g.Type, Data: make([]byte, len(g.Data))}
	}
	if err := c.InitParams(ctx, model, sgd); err != nil {
		t.Fatal(err)
	}
	err := c.Step(ctx, func(s *StepContext) error {
		_, err := s.SendGrads(grads)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.unary) != 1 {
		t.Fatalf("%d pushes, want 1", len(fake.unary))
	}
	sent := map[string]string{}
	for _, g := range fake.unary[0].GetGrads() {
		sent[g.GetName()] = hex.EncodeToString(g.GetContent())
	}
	for _, g := range vector.Grads {
		if sent[g.Name] != g.ClippedHex {
			t.Errorf("%s sent as %s, want %s", g.Name, sent[g.Name], g.ClippedHex)
		}
	}
}

func TestAGlobalClipNormThatIsNotAFiniteNumberAbove0IsRefused(t *testing.T) {
	for _, bound := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := Connect(context.Background(), Options{Pservers: []string{"127.0.0.1:1"}, GlobalClipNorm: bound})
		var e *Error
		if !errors.As(err, &e) || e.ErrorCode != pb.ErrorCode_CLIENT_INVALID_OPTIONS || !strings.Contains(e.Message, "GlobalClipNorm") {
			t.Errorf("GlobalClipNorm %v: got %v, want CLIENT_INVALID_OPTIONS naming GlobalClipNorm", bound, err)
		}
	}
}
