//go:build integration

package conformance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/protobuf/proto"
)

// TestLedgerAcrossAFailover trains a one-hot ledger (step k raises coordinate k by exactly 1.0,
// plain SGD with rate 1) while the pserver of shard 0 is killed -9 mid-training and a spare takes
// over: no coordinate is ever applied twice, no step fails, and the only zeros are shard 0's
// steps lost with the killed pserver — one contiguous run of steps, all before the replacement.
func TestLedgerAcrossAFailover(t *testing.T) {
	const steps, blockSize, killAt = 48, 8, 20
	c := startCluster(t, settings{Pservers: 2, Spares: 1, Masters: 1, BlockSize: blockSize})
	ctx := testContext(t)
	client := connect(t, ctx, c, "ledger-go")
	sgd := &pb.OptimizerConfig{
		Algorithm:    &pb.OptimizerConfig_Sgd{Sgd: &pb.Sgd{}},
		LearningRate: &pb.LearningRate{Base: proto.Float64(1)},
	}
	if err := client.InitParams(ctx, map[string]pserver.Tensor{"ledger": pserver.Float32s(make([]float32, steps))}, sgd); err != nil {
		t.Fatal(err)
	}
	onShard0 := make([]bool, steps)
	for _, b := range pserver.PlaceTensor("ledger", steps, blockSize, 2) {
		for i := b.Start; i < b.End; i++ {
			onShard0[i] = b.Shard == 0
		}
	}

	killed := make(chan string, 1)
	for step := 0; step < steps; step++ {
		if step == killAt {
			// Killed while the steps go on; the answer comes once a spare serves the shard.
			if _, err := fmt.Fprintln(c.stdin, "kill-serving 0"); err != nil {
				t.Fatal(err)
			}
			go func() { killed <- c.next(60 * time.Second) }()
		}
		grad := make([]float32, steps)
		grad[step] = -1 // p ← p − 1·g raises coordinate `step` by one
		err := client.Step(ctx, func(s *pserver.StepContext) error {
			if _, err := s.GetParams("ledger"); err != nil {
				return err
			}
			_, err := s.SendGrads(map[string]pserver.Tensor{"ledger": pserver.Float32s(grad)})
			return err
		})
		if err != nil {
			t.Fatalf("step %d failed: %v", step, err)
		}
	}
	if answer := <-killed; !strings.Contains(answer, `"serving"`) {
		t.Fatalf("kill-serving 0: %s", answer)
	}

	ledger := readFloat32s(t, ctx, client, "ledger")
	firstZero, lastZero := -1, -1
	for step, v := range ledger {
		switch {
		case v == 1:
		case v == 0 && onShard0[step]:
			if firstZero < 0 {
				firstZero = step
			}
			lastZero = step
		default:
			t.Errorf("coordinate %d (shard 0: %v) is %v: applied %v times", step, onShard0[step], v, v)
		}
	}
	// Lost steps are those the killed pserver applied after its last checkpoint: contiguous.
	for step := firstZero; step >= 0 && step <= lastZero; step++ {
		if onShard0[step] && ledger[step] != 0 {
			t.Errorf("zeros are not one run of lost steps: step %d is %v between %d and %d", step, ledger[step], firstZero, lastZero)
		}
	}
	t.Logf("ledger: %d steps, zeros (lost with the killed pserver) from step %d to %d", steps, firstZero, lastZero)
}
