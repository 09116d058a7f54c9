// Command digits-trainer is the demo trainer (apps/demo/src/trainer.ts) in Go: it trains the
// digits MLP on the tasks of a pserver job, with the weights on the pservers, using only the Go
// client (clients/go/pserver). It takes the same flags and prints the same JSON event lines on
// stdout, so the demo can run it in place of the TypeScript trainer.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/protobuf/proto"
)

type options struct {
	master                      []string
	data, name                  string
	passes, batch, hidden, seed int
	taskBytes, taskTimeoutMs    uint64
	learningRate                float64
	exitOnStdinClose            bool
	security                    pserver.SecurityFiles
}

func parseFlags() options {
	var o options
	master := flag.String("master", "", "master replicas, comma-separated")
	flag.StringVar(&o.data, "data", "", "the training files (CSV: label, 784 pixels)")
	flag.StringVar(&o.name, "name", fmt.Sprintf("trainer-%d", os.Getpid()), "this trainer's name")
	flag.IntVar(&o.passes, "passes", 3, "passes over the data")
	flag.IntVar(&o.batch, "batch", 32, "samples per step")
	flag.Uint64Var(&o.taskBytes, "task-bytes", 128*1024, "bytes of data per task")
	flag.Uint64Var(&o.taskTimeoutMs, "task-timeout-ms", 0, "how long a task may be held (default: the master's)")
	flag.IntVar(&o.hidden, "hidden", 64, "hidden units")
	flag.IntVar(&o.seed, "seed", 1, "seed of the initial weights")
	flag.Float64Var(&o.learningRate, "learning-rate", 0.004, "Adam learning rate")
	flag.BoolVar(&o.exitOnStdinClose, "exit-on-stdin-close", false, "exit when standard input closes (set by the demo)")
	flag.StringVar(&o.security.CAFile, "tls-ca", "", "connect with TLS; the CA of the servers' certificates (PEM)")
	flag.StringVar(&o.security.CertFile, "tls-cert", "", "client certificate for mutual TLS (PEM)")
	flag.StringVar(&o.security.KeyFile, "tls-key", "", "its private key (PEM)")
	flag.StringVar(&o.security.ServerName, "tls-server-name", "", "the name in the servers' certificates, if not the host")
	flag.StringVar(&o.security.TokenFile, "token-file", "", "send the bearer token in this file (needs TLS)")
	flag.Parse()
	if *master == "" || o.data == "" {
		fmt.Fprintln(os.Stderr, "digits-trainer: --master and --data are required")
		flag.Usage()
		os.Exit(2)
	}
	if o.passes < 1 || o.batch < 1 || o.hidden < 1 || o.seed < 1 || o.taskBytes < 1 {
		fmt.Fprintln(os.Stderr, "digits-trainer: --passes, --batch, --hidden, --seed and --task-bytes must be positive")
		os.Exit(2)
	}
	o.master = strings.Split(*master, ",")
	return o
}

// report prints one event line: {"event":…,"t":<ms>,…}.
func report(event string, fields ...interface{}) {
	line := fmt.Sprintf(`{"event":%q,"t":%d`, event, time.Now().UnixMilli())
	for i := 0; i+1 < len(fields); i += 2 {
		value, _ := json.Marshal(fields[i+1])
		line += fmt.Sprintf(`,%q:%s`, fields[i], value)
	}
	fmt.Println(line + "}")
}

func main() {
	o := parseFlags()
	if o.exitOnStdinClose {
		// The demo holds the other end: when it dies, even by SIGKILL, this trainer goes too.
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			os.Exit(1)
		}()
	}
	if err := run(context.Background(), o); err != nil {
		report("failed", "error", err.Error())
		os.Exit(1)
	}
	os.Exit(0)
}

func run(ctx context.Context, o options) error {
	tls, token, err := pserver.LoadSecurity(o.security)
	if err != nil {
		return err
	}
	client, err := pserver.Connect(ctx, pserver.Options{Master: o.master, Name: o.name, TLS: tls, Token: token})
	if err != nil {
		return err
	}
	defer client.Close()
	// Every trainer proposes the same dataset and the same initial weights; the first counts.
	dataset := &pb.SetDatasetRequest{Source: &pb.SetDatasetRequest_Files{
		Files: &pb.FileDataset{Globs: []string{o.data}, TaskBytes: o.taskBytes},
	}}
	if o.taskTimeoutMs > 0 {
		dataset.TaskTimeoutMs = proto.Uint64(o.taskTimeoutMs)
	}
	_, err = client.SetDataset(ctx, dataset)
	if err != nil {
		return err
	}
	adam := &pb.OptimizerConfig{
		Algorithm:    &pb.OptimizerConfig_Adam{Adam: &pb.Adam{}},
		LearningRate: &pb.LearningRate{Base: proto.Float64(o.learningRate)},
	}
	if err := client.InitParams(ctx, initialParams(o.hidden, uint32(o.seed)).tensors(), adam); err != nil {
		return err
	}
	report("ready")

	train := func(batch []sample, pass int) error {
		started := time.Now().UnixMilli()
		var loss float64
		err := client.Step(ctx, func(s *pserver.StepContext) error {
			params, err := s.GetParams(paramNames...)
			if err != nil {
				return err
			}
			var grads mlp
			loss, grads = gradients(fromTensors(params), batch)
			_, err = s.SendGrads(grads.tensors())
			return err
		})
		if err == nil {
			report("step", "pass", pass, "loss", loss, "samples", len(batch), "started", started)
		}
		return err
	}

	for pass := 0; pass < o.passes; pass++ {
		tasks := client.Tasks(uint64(pass))
		for tasks.Next(ctx) {
			var batch []sample
			err := tasks.Task().ReadLines(func(line string) error {
				s, err := fromCSVLine(line)
				if err != nil {
					return err
				}
				if batch = append(batch, s); len(batch) == o.batch {
					err, batch = train(batch, pass), nil
				}
				return err
			})
			if err == nil && len(batch) > 0 {
				err = train(batch, pass)
			}
			if err != nil {
				_ = tasks.Close()
				return err
			}
		}
		if err := tasks.Err(); err != nil {
			return err
		}
		report("pass over", "pass", pass)
	}
	client.Close()
	report("done")
	return nil
}
