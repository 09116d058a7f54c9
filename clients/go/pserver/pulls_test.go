package pserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

var sgd = &pb.OptimizerConfig{Algorithm: &pb.OptimizerConfig_Sgd{Sgd: &pb.Sgd{}}, LearningRate: &pb.LearningRate{Base: proto.Float64(1)}}

// counting is n float32s 0, 1, 2, …
func counting(n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i)
	}
	return xs
}

func TestAPullOfAShardLargerThanAMessageIsSplitIntoCalls(t *testing.T) {
	fake := newFakePserver()
	// 4 MiB in 64 blocks of 64 KiB, all on the one shard; the client's messages are 1 MiB.
	c := fakeClient(t, fake, Options{BlockSize: 16384, MaxMessageBytes: 1 << 20, StepTimeout: 5 * time.Second})
	ctx := context.Background()
	values := counting(1 << 20)
	if err := c.InitParams(ctx, map[string]Tensor{"w": Float32s(values)}, sgd); err != nil {
		t.Fatal(err)
	}
	params, err := c.GetParams(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	got := params["w"].Float32s()
	for i := range values {
		if got[i] != values[i] {
			t.Fatalf("w[%d] = %v, want %v", i, got[i], values[i])
		}
	}
	names := 0
	for _, call := range fake.gets {
		if len(call)*16384*4 > 1<<19 {
			t.Errorf("one call asked for %d blocks of 64 KiB: over half the 1 MiB limit", len(call))
		}
		names += len(call)
	}
	if len(fake.gets) < 8 || names != 64 {
		t.Errorf("%d GetParams calls for %d blocks, want at least 8 for all 64", len(fake.gets), names)
	}
}

func TestABlockOverTheMessageLimitIsMessageTooLargeAtOnce(t *testing.T) {
	fake := newFakePserver()
	c := fakeClient(t, fake, Options{MaxMessageBytes: 1 << 20})
	ctx := context.Background()
	// One block (the default block size) of 2 MiB: it fits in no reply of 1 MiB. Written straight
	// into the fake, as InitParam of it could not be sent either.
	fake.params["big"] = &pb.Tensor{Name: "big", ElementType: pb.ElementType_ELEMENT_TYPE_FLOAT32, Content: make([]byte, 2<<20)}
	started := time.Now()
	_, err := c.GetParams(ctx, "big")
	var e *Error
	if !errors.As(err, &e) || e.ErrorCode != pb.ErrorCode_CLIENT_MESSAGE_TOO_LARGE || !strings.Contains(e.Message, "big") {
		t.Fatalf("got %v, want CLIENT_MESSAGE_TOO_LARGE naming the block", err)
	}
	if len(fake.gets) != 0 || time.Since(started) > 5*time.Second {
		t.Errorf("%d GetParams calls in %s: want none, at once", len(fake.gets), time.Since(started))
	}
}

func TestAReplyTooLargeForThePserverIsAskedForInHalves(t *testing.T) {
	fake := newFakePserver()
	fake.replyLimit = 100 << 10 // the pserver's limit is far below the client's 64 MiB
	c := fakeClient(t, fake, Options{BlockSize: 8192, StepTimeout: 5 * time.Second})
	ctx := context.Background()
	values := counting(8 * 8192) // 8 blocks of 32 KiB: 3 per reply at most
	if err := c.InitParams(ctx, map[string]Tensor{"w": Float32s(values)}, sgd); err != nil {
		t.Fatal(err)
	}
	params, err := c.GetParams(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	if got := params["w"].Float32s(); got[len(got)-1] != values[len(values)-1] || got[12345] != 12345 {
		t.Fatalf("w read back wrong: w[12345] = %v", got[12345])
	}
	fake.replyLimit = 16 << 10 // now one block is over it
	_, err = c.GetParams(ctx, "w")
	if !errors.Is(err, ErrClientMessageTooLarge) || !errors.Is(err, ErrReplyTooLarge) {
		t.Fatalf("got %v, want CLIENT_MESSAGE_TOO_LARGE caused by PSERVER_REPLY_TOO_LARGE", err)
	}
}

func TestGRPCsOwnResourceExhaustedIsNotRetried(t *testing.T) {
	fake := newFakePserver()
	// The pserver takes messages of 256 KiB; the client would send 1 MiB: gRPC on the server
	// refuses the push with RESOURCE_EXHAUSTED and no code.
	c := fakeClient(t, fake, Options{MaxMessageBytes: 1 << 20, NotInitializer: true}, grpc.MaxRecvMsgSize(256<<10))
	ctx := context.Background()
	if err := c.InitParams(ctx, map[string]Tensor{"w": Float32s(make([]float32, 128<<10))}, sgd); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	err := c.Step(ctx, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"w": Float32s(make([]float32, 128<<10))})
		return err
	})
	var e *Error
	if !errors.As(err, &e) || e.ErrorCode != pb.ErrorCode_CLIENT_MESSAGE_TOO_LARGE {
		t.Fatalf("got %v, want CLIENT_MESSAGE_TOO_LARGE", err)
	}
	if elapsed := time.Since(started); elapsed > 5*time.Second {
		t.Errorf("failed after %s: a message over the limit is not retried", elapsed)
	}
}

func TestAPushAboveTheMessageLimitIsStreamed(t *testing.T) {
	fake := newFakePserver()
	c := fakeClient(t, fake, Options{MaxMessageBytes: 1 << 20})
	ctx := context.Background()
	big := Float32s(counting(512*1024)).WithShape(512, 1024) // 2 MiB, one block
	small := Float32s(counting(6)).WithShape(2, 3)
	// 2 MiB does not fit in one InitParam of 1 MiB (one block): gRPC's own limit, not retried.
	if err := c.InitParams(ctx, map[string]Tensor{"big": big}, sgd); !errors.Is(err, ErrClientMessageTooLarge) {
		t.Fatalf("InitParams of one block over the limit: %v, want CLIENT_MESSAGE_TOO_LARGE", err)
	}
	fake.params["big"] = &pb.Tensor{Name: "big", ElementType: big.Type, Shape: big.Shape, Content: big.Data}
	if err := c.InitParams(ctx, map[string]Tensor{"small": small}, sgd); err != nil {
		t.Fatal(err)
	}
	err := c.Step(ctx, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"big": big})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Step(ctx, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"small": small})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.streamed) != 1 || len(fake.unary) != 1 {
		t.Fatalf("%d streamed pushes and %d unary ones, want the big one streamed and the small one unary", len(fake.streamed), len(fake.unary))
	}
	var content []byte
	for i, chunk := range fake.streamed[0] {
		piece := chunk.GetGrads()[0]
		if len(piece.GetContent()) > 1<<19 {
			t.Errorf("piece %d holds %d bytes: over half the message limit", i, len(piece.GetContent()))
		}
		if (i == 0) != (len(piece.GetShape()) > 0) || (i == 0 && !shapesEqual(piece.GetShape(), big.Shape)) {
			t.Errorf("piece %d (offset %d) has shape %v: the piece at offset 0 carries the gradient's", i, piece.GetOffset(), piece.GetShape())
		}
		if (i == 0) != (chunk.GetContext() != nil) {
			t.Errorf("piece %d: the context goes with the first piece only", i)
		}
		content = append(content, piece.GetContent()...)
	}
	if string(content) != string(big.Data) {
		t.Error("the streamed pieces do not add up to the gradient")
	}
	if grad := fake.unary[0].GetGrads()[0]; !shapesEqual(grad.GetShape(), []uint64{2, 3}) {
		t.Errorf("the unary push sent shape %v, want [2 3]", grad.GetShape())
	}
}
