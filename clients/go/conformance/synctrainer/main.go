// Command synctrainer is a trainer of the bit-exact SYNC scenario
// (proto/testdata/conformance/sync_steps.json), the Go twin of
// libs/client/test/fixtures/sync-trainer.ts: same arguments, same JSON line, same exit codes.
//
//	synctrainer <sync_steps.json> <trainer id> <address,...>
//	synctrainer <sync_steps.json> <trainer id> master=<address,...>
//
// It trains the scenario's model for its steps, reading the parameters and pushing the
// scenario's gradient of them in each step while it has data, and pushing nothing afterwards (its
// steps then tell every shard that it has no data). It prints one JSON line, the outcomes of its
// pushes, and exits 0; any error goes to stderr with exit 1.
//
// With pserver addresses the job is standalone; with `master=` the trainer registers with the
// master, which must give it the scenario's id (trainers register one at a time, in id order:
// the pservers fold a step's contributions in trainer id order).
//
// With SYNC_TRAINER_PAUSE_BEFORE_STEP=k[,k…] it stops itself (SIGSTOP) before each step k, after
// a line `{"pausing":k}`: a test then fails a shard over, or changes the shard count, while the
// other trainers' pushes of step k wait in it, and resumes it (SIGCONT).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/protobuf/encoding/protojson"
)

type scenario struct {
	BlockSize int `json:"blockSize"`
	Steps     int `json:"steps"`
	Trainers  []struct {
		ID          uint64 `json:"id"`
		Initializer bool   `json:"initializer"`
		DataSteps   int    `json:"dataSteps"`
	} `json:"trainers"`
	Tensors []struct {
		Name   string `json:"name"`
		Length int    `json:"length"`
		// Optimizer is an OptimizerConfig in proto JSON, which only protojson reads right.
		Optimizer json.RawMessage `json:"optimizer"`
	} `json:"tensors"`
}

func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85EBCA6B
	h ^= h >> 13
	h *= 0xC2B2AE35
	h ^= h >> 16
	return h
}

// gradient is the scenario's gradient of trainer t at step k for element j of tensor i, read
// value p: a float32 built from a hash, plus p/8, summed in float64 and rounded once.
func gradient(t, k, i, j uint32, p float32) float32 {
	h := fmix32(t*0x9E3779B1 + k*0x85EBCA77 + i*0xC2B2AE3D + j*0x27D4EB2F)
	f := math.Ldexp(float64(1<<23+((h>>1)&0x7FFFFF)), int((h>>24)&15)-8-23)
	if h&1 == 1 {
		f = -f
	}
	return float32(f + float64(p)/8)
}

// pauseSteps is the steps of SYNC_TRAINER_PAUSE_BEFORE_STEP (k[,k…]).
func pauseSteps(list string) (map[int]bool, error) {
	steps := map[int]bool{}
	for _, field := range strings.Split(list, ",") {
		if field == "" {
			continue
		}
		k, err := strconv.Atoi(field)
		if err != nil {
			return nil, fmt.Errorf("SYNC_TRAINER_PAUSE_BEFORE_STEP: %w", err)
		}
		steps[k] = true
	}
	return steps, nil
}

func run(file string, t uint64, target string) error {
	pauses, err := pauseSteps(os.Getenv("SYNC_TRAINER_PAUSE_BEFORE_STEP"))
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var sc scenario
	if err := json.Unmarshal(raw, &sc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	dataSteps, initializer, found := 0, false, false
	for _, trainer := range sc.Trainers {
		if trainer.ID == t {
			dataSteps, initializer, found = trainer.DataSteps, trainer.Initializer, true
		}
	}
	if !found {
		return fmt.Errorf("trainer %d: not in %s", t, file)
	}
	names := make([]string, len(sc.Tensors))
	tensors := map[string]pserver.Tensor{}
	optimizers := map[string]*pb.OptimizerConfig{}
	for i, tensor := range sc.Tensors {
		names[i] = tensor.Name
		values := make([]float32, tensor.Length)
		for j := range values {
			values[j] = float32(j%7-3) / 4
		}
		tensors[tensor.Name] = pserver.Float32s(values)
		optimizers[tensor.Name] = &pb.OptimizerConfig{}
		if err := protojson.Unmarshal(tensor.Optimizer, optimizers[tensor.Name]); err != nil {
			return fmt.Errorf("tensor %s: optimizer: %w", tensor.Name, err)
		}
	}

	opts := pserver.Options{
		Pservers: strings.Split(target, ","), TrainerID: t, NotInitializer: !initializer, BlockSize: sc.BlockSize,
	}
	if strings.HasPrefix(target, "master=") {
		// The master assigns the trainer id, the initializer and the block size.
		opts = pserver.Options{Master: strings.Split(strings.TrimPrefix(target, "master="), ","), Name: fmt.Sprintf("sync-%d", t)}
	}
	ctx := context.Background()
	client, err := pserver.Connect(ctx, opts)
	if err != nil {
		return err
	}
	defer client.Close()
	if id := client.TrainerID(); id != t {
		return fmt.Errorf("registered as trainer %d, the scenario's id is %d", id, t)
	}
	if err := client.InitParamsWith(ctx, tensors, func(name string) *pb.OptimizerConfig { return optimizers[name] }); err != nil {
		return err
	}
	outcomes := map[string]int{}
	for k := 1; k <= sc.Steps; k++ {
		if pauses[k] {
			// os.Stdout is unbuffered: the line is out before the process stops.
			fmt.Printf("{\"pausing\":%d}\n", k)
			if err := syscall.Kill(os.Getpid(), syscall.SIGSTOP); err != nil {
				return err
			}
		}
		var report pserver.PushReport
		err := client.Step(ctx, func(s *pserver.StepContext) error {
			report = pserver.PushReport{}
			if s.Step() != uint64(k) {
				return fmt.Errorf("step %d ran as step %d", k, s.Step())
			}
			if k > dataSteps {
				return nil // the step's end tells every shard there is no data
			}
			params, err := s.GetParams(names...)
			if err != nil {
				return err
			}
			grads := map[string]pserver.Tensor{}
			for i, name := range names {
				values := params[name].Float32s()
				g := make([]float32, len(values))
				for j, p := range values {
					g[j] = gradient(uint32(t), uint32(k), uint32(i), uint32(j), p)
				}
				grads[name] = pserver.Float32s(g)
			}
			report, err = s.SendGrads(grads, pserver.SampleCount(1+(t+uint64(k))%3))
			return err
		})
		if err != nil {
			return err
		}
		// Counted once the step is done: a re-run (a stale view) pushes again, and only its
		// last report stands.
		for _, push := range report.Shards {
			outcomes[push.Outcome.String()]++
		}
	}
	line, err := json.Marshal(struct {
		Trainer  uint64         `json:"trainer"`
		Steps    int            `json:"steps"`
		Outcomes map[string]int `json:"outcomes"`
	}{t, sc.Steps, outcomes})
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: synctrainer <sync_steps.json> <trainer id> <address,...>|master=<address,...>")
		os.Exit(1)
	}
	t, err := strconv.ParseUint(os.Args[2], 10, 64)
	if err == nil {
		err = run(os.Args[1], t, os.Args[3])
	} else {
		err = fmt.Errorf("trainer id %q: %w", os.Args[2], err)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "synctrainer:", err)
		os.Exit(1)
	}
}
