// Command ledgertrainer is a trainer of the one-hot ledger (libs/testing/src/ledger/), the Go
// twin of libs/client/test/fixtures/ledger-trainer.ts: same arguments, same JSON lines, same exit
// codes.
//
// The model is one float32 tensor `ledger` of trainers × capacity zeros under plain SGD with
// learning rate 1, and step k of the trainer with ordinal o pushes a gradient of -1 at coordinate
// o × capacity + k only, so that every acknowledged step raises its own coordinate by exactly 1.
// The ordinal comes from the command line, not from the master: trainer ids can change when a
// session is registered again. A second tensor, `ballast`, of zeros that no step touches, gives the
// shards the size that makes restoring one take as long as it does for a real model.
//
//	ledgertrainer <master,...> <ordinal> <trainers> <capacity> <pace-ms> <ballast>
//
// It steps every pace-ms until SIGUSR2 (then it finishes the step under way and stops) and prints
// registered, ready, one `step` per acknowledged step (with the ack time), one `step-error` per
// step that failed (it goes on with the next coordinate, so that a run shows every error) and
// `done`; it exits 0 only if no step failed. Closing its stdin ends it at once (the test runner
// died).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/protobuf/proto"
)

var ordinal int

func emit(event string, fields map[string]any) {
	line := map[string]any{"event": event, "ordinal": ordinal}
	for k, v := range fields {
		line[k] = v
	}
	out, _ := json.Marshal(line)
	fmt.Println(string(out))
}

func nowMs() int64 { return time.Now().UnixMilli() }

func number(arg string) int {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 0 {
		fmt.Fprintf(os.Stderr, "ledgertrainer: expected a non-negative integer, got %q\n", arg)
		os.Exit(2)
	}
	return n
}

func main() {
	if len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: ledgertrainer <master,...> <ordinal> <trainers> <capacity> <pace-ms> <ballast>")
		os.Exit(2)
	}
	masters := strings.Split(os.Args[1], ",")
	ordinal = number(os.Args[2])
	trainers, capacity, paceMs, ballast := number(os.Args[3]), number(os.Args[4]), number(os.Args[5]), number(os.Args[6])

	var stopping atomic.Bool
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	go func() {
		<-usr2
		stopping.Store(true)
	}()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(2)
	}()

	ctx := context.Background()
	client, err := pserver.Connect(ctx, pserver.Options{Master: masters, Name: fmt.Sprintf("ledger-%d", ordinal)})
	if err != nil {
		emit("failed", map[string]any{"error": err.Error()})
		os.Exit(1)
	}
	emit("registered", map[string]any{"trainerId": client.TrainerID()})
	length := trainers * capacity
	tensors := map[string]pserver.Tensor{"ledger": pserver.Float32s(make([]float32, length))}
	if ballast > 0 {
		tensors["ballast"] = pserver.Float32s(make([]float32, ballast))
	}
	sgd := &pb.OptimizerConfig{
		Algorithm:    &pb.OptimizerConfig_Sgd{Sgd: &pb.Sgd{}},
		LearningRate: &pb.LearningRate{Base: proto.Float64(1)},
	}
	if err := client.InitParams(ctx, tensors, sgd); err != nil {
		emit("failed", map[string]any{"error": err.Error()})
		os.Exit(1)
	}
	emit("ready", nil)

	steps, errors := 0, 0
	for k := 0; !stopping.Load(); k++ {
		if k >= capacity {
			emit("capacity-reached", map[string]any{"capacity": capacity})
			os.Exit(3)
		}
		coordinate := ordinal*capacity + k
		startMs := nowMs()
		// The identity the first run of the step carried (every re-run must carry the same).
		begun := map[string]any{"k": k, "startMs": startMs}
		err := client.Step(ctx, func(s *pserver.StepContext) error {
			if _, ok := begun["trainerId"]; !ok {
				begun["trainerId"], begun["step"] = s.TrainerID(), s.Step()
			}
			gradient := make([]float32, length)
			gradient[coordinate] = -1
			_, err := s.SendGrads(map[string]pserver.Tensor{"ledger": pserver.Float32s(gradient)})
			return err
		})
		if err != nil {
			errors++
			begun["atMs"], begun["error"] = nowMs(), err.Error()
			emit("step-error", begun)
		} else {
			steps++
			begun["ackMs"] = nowMs()
			emit("step", begun)
		}
		if paceMs > 0 {
			time.Sleep(time.Duration(paceMs) * time.Millisecond)
		}
	}
	emit("done", map[string]any{"steps": steps, "errors": errors})
	client.Close()
	if errors > 0 {
		os.Exit(1)
	}
}
