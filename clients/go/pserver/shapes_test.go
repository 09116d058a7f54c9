package pserver

import (
	"context"
	"errors"
	"strings"
	"testing"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
)

func TestAGradientThatDoesNotFitItsTensorIsRefusedBeforeItIsSent(t *testing.T) {
	fake := newFakePserver()
	c := fakeClient(t, fake, Options{BlockSize: 4})
	ctx := context.Background()
	model := map[string]Tensor{
		"m": Float32s(counting(6)).WithShape(2, 3),
		"v": Float32s(counting(5)), // a flat vector, in two blocks
	}
	if err := c.InitParams(ctx, model, sgd); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, tensor string
		grad         Tensor
		says         []string
	}{
		{"too few elements", "m", Float32s(counting(5)), []string{"m", "5 elements", "6", "[2, 3]"}},
		{"too many elements", "v", Float32s(counting(6)), []string{"v", "6 elements", "5"}},
		{"a transposed shape", "m", Float32s(counting(6)).WithShape(3, 2), []string{"m", "[3, 2]", "[2, 3]"}},
		{"a flattened shape", "m", Float32s(counting(6)).WithShape(6), []string{"m", "[6]", "[2, 3]"}},
		{"a 2-D shape for a flat vector", "v", Float32s(counting(5)).WithShape(5, 1), []string{"v", "[5, 1]", "flat vector of 5"}},
		{"a shape that is not its data's", "m", Float32s(counting(6)).WithShape(2, 2), []string{"m", "[2, 2]", "4 elements", "6"}},
		{"another element type", "m", Float64s(make([]float64, 6)), []string{"m", "FLOAT64", "FLOAT32"}},
		{"bytes that are not whole elements", "m", Tensor{Type: pb.ElementType_ELEMENT_TYPE_FLOAT32, Data: make([]byte, 7)}, []string{"m", "7 bytes"}},
	}
	for _, tc := range cases {
		err := c.Step(ctx, func(s *StepContext) error {
			_, err := s.SendGrads(map[string]Tensor{tc.tensor: tc.grad})
			return err
		})
		var e *Error
		if !errors.As(err, &e) || e.ErrorCode != pb.ErrorCode_CLIENT_SHAPE_MISMATCH || IsRetryable(err) {
			t.Errorf("%s: got %v, want CLIENT_SHAPE_MISMATCH", tc.name, err)
			continue
		}
		for _, want := range tc.says {
			if !strings.Contains(e.Message, want) {
				t.Errorf("%s: %q does not say %q", tc.name, e.Message, want)
			}
		}
	}
	if len(fake.unary)+len(fake.streamed) != 0 {
		t.Fatalf("%d pushes reached the pserver", len(fake.unary)+len(fake.streamed))
	}
	// Fitting gradients go, each block with the gradient's own shape (none, when it has none).
	err := c.Step(ctx, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"m": Float32s(counting(6)).WithShape(2, 3), "v": Float32s(counting(5)).WithShape(5)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Step(ctx, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"v": Float32s(counting(5))})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string][]uint64{}
	for _, grad := range fake.unary[0].GetGrads() {
		sent[grad.GetName()] = grad.GetShape()
	}
	if !shapesEqual(sent["m@0"], []uint64{2, 3}) || !shapesEqual(sent["m@1"], []uint64{2, 3}) || !shapesEqual(sent["v@0"], []uint64{5}) || !shapesEqual(sent["v@1"], []uint64{5}) {
		t.Errorf("shapes sent: %v", sent)
	}
	for _, grad := range fake.unary[1].GetGrads() {
		if len(grad.GetShape()) != 0 {
			t.Errorf("%s: a gradient without a shape sent shape %v", grad.GetName(), grad.GetShape())
		}
	}
}

func TestATensorWhoseShapeIsNotItsDataIsRefusedAtInit(t *testing.T) {
	c := fakeClient(t, newFakePserver(), Options{})
	err := c.InitParams(context.Background(), map[string]Tensor{"m": Float32s(counting(6)).WithShape(4, 2)}, sgd)
	if !errors.Is(err, ErrClientShapeMismatch) || !strings.Contains(err.Error(), "[4, 2]") {
		t.Fatalf("got %v, want CLIENT_SHAPE_MISMATCH naming the shape", err)
	}
}
