package pserver

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
)

// modeFakes are n fake pservers whose status reports mode; set fills in shard i's status.
func modeFakes(n int, mode pb.ConsistencyMode, set func(i int, status *pb.GetShardStatusResponse)) []*fakePserver {
	fakes := make([]*fakePserver, n)
	for i := range fakes {
		fakes[i] = newFakePserver()
		fakes[i].status = &pb.GetShardStatusResponse{Consistency: &pb.Consistency{Mode: mode}}
		if set != nil {
			set(i, fakes[i].status)
		}
	}
	return fakes
}

// stepOf runs one step of fn and returns its number.
func stepOf(t *testing.T, c *Client, fn func(*StepContext) error) uint64 {
	t.Helper()
	var step uint64
	err := c.Step(context.Background(), func(s *StepContext) error {
		step = s.Step()
		return fn(s)
	})
	if err != nil {
		t.Fatal(err)
	}
	return step
}

func nothing(*StepContext) error { return nil }

// pushesOf is every SendGrads a fake got, as "<step> <sample count, - if unset> <gradients>".
func pushesOf(f *fakePserver) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, req := range f.unary {
		count := "-"
		if req.SampleCount != nil {
			count = fmt.Sprint(req.GetSampleCount())
		}
		out = append(out, fmt.Sprintf("%d %s %d", req.GetContext().GetStep(), count, len(req.GetGrads())+len(req.GetSparse())))
	}
	return out
}

func TestATrainerIDOutsideThePserversRangeIsRefused(t *testing.T) {
	_, err := Connect(context.Background(), Options{Pservers: []string{"127.0.0.1:1"}, TrainerID: MaxTrainerID + 1})
	if !errors.Is(err, ErrClientInvalidOptions) || !strings.Contains(err.Error(), "TrainerID") || !strings.Contains(err.Error(), "9007199254740992") {
		t.Fatalf("TrainerID 2^53: %v, want CLIENT_INVALID_OPTIONS naming TrainerID and the value", err)
	}
}

func TestAGivenTrainerIDStampsEveryCallAndStatusAsk(t *testing.T) {
	fakes := modeFakes(2, pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, nil)
	c := connectFakes(t, fakes, Options{TrainerID: 3, NotInitializer: true})
	if c.TrainerID() != 3 {
		t.Fatalf("TrainerID() = %d, want 3", c.TrainerID())
	}
	var rc *pb.RequestContext
	stepOf(t, c, func(s *StepContext) error {
		rc = s.RequestContext(1)
		return nil
	})
	if rc.GetTrainerId() != 3 {
		t.Errorf("the step carried trainer %d, want 3", rc.GetTrainerId())
	}
	for i, f := range fakes {
		if len(f.statusAsks) == 0 || f.statusAsks[0].GetTrainerId() != 3 {
			t.Errorf("shard %d: status asked with %v, want trainer 3 (its last step is that trainer's)", i, f.statusAsks)
		}
	}
	random := connectFakes(t, modeFakes(1, pb.ConsistencyMode_CONSISTENCY_MODE_ASYNC, nil), Options{})
	if id := random.TrainerID(); id < 1 || id >= 1<<48 {
		t.Errorf("a random trainer id %d, want one in [1, 2^48)", id)
	}
}

func TestTheViewsConsistencyIsTheShardsMode(t *testing.T) {
	cases := []struct {
		mode pb.ConsistencyMode
		want Consistency
		text string
	}{
		{pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, ConsistencySync, "sync"},
		{pb.ConsistencyMode_CONSISTENCY_MODE_BOUNDED_STALENESS, ConsistencySSP, "ssp"},
		{pb.ConsistencyMode_CONSISTENCY_MODE_ASYNC, ConsistencyAsync, "async"},
		{pb.ConsistencyMode_CONSISTENCY_MODE_UNSPECIFIED, ConsistencyAsync, "async"},
	}
	for _, tc := range cases {
		c := connectFakes(t, modeFakes(3, tc.mode, nil), Options{})
		if got := c.View().Consistency; got != tc.want || got.String() != tc.text {
			t.Errorf("%s: view consistency %v, want %s", tc.mode, got, tc.text)
		}
	}
}

func TestAClusterViewCarriesTheJobsMode(t *testing.T) {
	for mode, want := range map[pb.ConsistencyMode]Consistency{
		pb.ConsistencyMode_CONSISTENCY_MODE_UNSPECIFIED:       ConsistencyAsync,
		pb.ConsistencyMode_CONSISTENCY_MODE_SYNC:              ConsistencySync,
		pb.ConsistencyMode_CONSISTENCY_MODE_BOUNDED_STALENESS: ConsistencySSP,
	} {
		view := viewFromProto(&pb.ClusterView{Consistency: &pb.Consistency{Mode: mode}})
		if view.Consistency != want {
			t.Errorf("%v: got %v, want %v", mode, view.Consistency, want)
		}
	}
}

func TestShardsOfDifferentModesAreInvalidOptions(t *testing.T) {
	fakes := modeFakes(2, pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, func(i int, status *pb.GetShardStatusResponse) {
		if i == 1 {
			status.Consistency.Mode = pb.ConsistencyMode_CONSISTENCY_MODE_ASYNC
		}
	})
	opts := Options{}
	for _, f := range fakes {
		opts.Pservers = append(opts.Pservers, serve(t, f))
	}
	_, err := Connect(context.Background(), opts)
	if !errors.Is(err, ErrClientInvalidOptions) || !strings.Contains(err.Error(), "different consistency modes (sync, async)") {
		t.Fatalf("got %v, want CLIENT_INVALID_OPTIONS naming both modes", err)
	}
}

func TestTheFirstStepIsWhereTheShardsSayTheTrainerGoesOn(t *testing.T) {
	cases := []struct {
		name string
		mode pb.ConsistencyMode
		set  func(i int, status *pb.GetShardStatusResponse)
		want uint64
	}{
		// SYNC: the open step of the shard furthest behind.
		{"sync", pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, func(i int, s *pb.GetShardStatusResponse) {
			s.Version = []uint64{6, 4, 5}[i]
			s.TrainerLastStep = 9
		}, 5},
		// SSP: past the trainer's last step on any shard.
		{"ssp", pb.ConsistencyMode_CONSISTENCY_MODE_BOUNDED_STALENESS, func(i int, s *pb.GetShardStatusResponse) {
			s.TrainerLastStep = []uint64{2, 9, 0}[i]
			s.Version = 20
		}, 10},
		// SSP, a trainer that joins a running job: at the slowest member's clock.
		{"ssp joiner", pb.ConsistencyMode_CONSISTENCY_MODE_BOUNDED_STALENESS, func(i int, s *pb.GetShardStatusResponse) {
			s.MinClock = []uint64{7, 9, 8}[i]
		}, 10},
		{"async", pb.ConsistencyMode_CONSISTENCY_MODE_ASYNC, func(i int, s *pb.GetShardStatusResponse) {
			s.Version, s.TrainerLastStep = 7, 7
		}, 1},
	}
	for _, tc := range cases {
		c := connectFakes(t, modeFakes(3, tc.mode, tc.set), Options{})
		if first, second := stepOf(t, c, nothing), stepOf(t, c, nothing); first != tc.want || second != tc.want+1 {
			t.Errorf("%s: steps %d, %d, want %d, %d", tc.name, first, second, tc.want, tc.want+1)
		}
	}
}

func TestReadsAreStepZeroAndTakeNoStepNumber(t *testing.T) {
	fakes := modeFakes(1, pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, nil)
	c := connectFakes(t, fakes, Options{})
	ctx := context.Background()
	initTable(t, c, true)
	if _, err := c.GetParams(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListParams(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup(ctx, "emb", []int64{1}); err != nil {
		t.Fatal(err)
	}
	want := []string{"InitParam 0", "InitTable 0", "FinishInitParams 0", "GetParams 0", "ListParams 0", "GetRows 0"}
	if !reflect.DeepEqual(fakes[0].stamps, want) {
		t.Fatalf("calls %v, want %v: reads and init are step 0, and a read pushes no skip", fakes[0].stamps, want)
	}
	if step := stepOf(t, c, nothing); step != 1 {
		t.Errorf("the first training step after the reads is %d, want 1", step)
	}
}

func TestSampleCountGoesOnThePush(t *testing.T) {
	f := newFakePserver()
	c := fakeClient(t, f, Options{})
	if err := c.InitParams(context.Background(), map[string]Tensor{"w": Float32s([]float32{1, 2})}, sgd); err != nil {
		t.Fatal(err)
	}
	stepOf(t, c, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"w": Float32s([]float32{1, 1})}, SampleCount(3))
		return err
	})
	stepOf(t, c, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"w": Float32s([]float32{1, 1})})
		return err
	})
	if got := pushesOf(f); !reflect.DeepEqual(got, []string{"1 3 1", "2 - 1"}) {
		t.Errorf("pushes %v, want the sample count on the first only (unset: 1 on the pserver)", got)
	}
}

func TestAStreamedPushCarriesTheSampleCountOnItsFirstChunk(t *testing.T) {
	f := newFakePserver()
	c := fakeClient(t, f, Options{MaxMessageBytes: 1 << 20, NotInitializer: true})
	big := Float32s(counting(300 * 1024)) // 1.2 MB: over the message limit
	f.params["big"] = &pb.Tensor{Name: "big", ElementType: big.Type, Content: big.Data}
	stepOf(t, c, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"big": big}, SampleCount(4))
		return err
	})
	if len(f.streamed) != 1 || len(f.streamed[0]) < 2 {
		t.Fatalf("%d streams, want the push streamed in pieces", len(f.streamed))
	}
	for i, chunk := range f.streamed[0] {
		if want := i == 0; (chunk.SampleCount != nil) != want || (want && chunk.GetSampleCount() != 4) {
			t.Errorf("chunk %d: sample count %v, want 4 on the first chunk only", i, chunk.SampleCount)
		}
	}
}

func TestSendGradsReportsEachShardsOutcomeAndVersion(t *testing.T) {
	fakes := modeFakes(3, pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, nil)
	c := connectFakes(t, fakes, Options{BlockSize: 2})
	w := Float32s(counting(12))
	if err := c.InitParams(context.Background(), map[string]Tensor{"w": w}, sgd); err != nil {
		t.Fatal(err)
	}
	// The report is in shard order; the blocks' placement need not be.
	shards := map[int]bool{}
	for _, b := range PlaceTensor("w", 12, 2, 3) {
		shards[b.Shard] = true
	}
	var want PushReport
	for _, shard := range shardsOf(shards) {
		outcome := pb.PushOutcome_PUSH_OUTCOME_ACCUMULATED
		if shard == 1 {
			outcome = pb.PushOutcome_PUSH_OUTCOME_DUPLICATE
		}
		fakes[shard].pushReplies = []*pb.SendGradsResponse{{Outcome: outcome, Version: uint64(10 + shard)}}
		want.Shards = append(want.Shards, ShardPush{Shard: shard, Outcome: outcome, Version: uint64(10 + shard)})
	}
	var got PushReport
	stepOf(t, c, func(s *StepContext) error {
		var err error
		got, err = s.SendGrads(map[string]Tensor{"w": w}, SampleCount(2))
		return err
	})
	if len(want.Shards) < 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("report %+v, want %+v", got, want)
	}
}

func TestADroppedLatePushMovesTheNextStepPastTheClosedOnes(t *testing.T) {
	fakes := modeFakes(1, pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, nil)
	c := connectFakes(t, fakes, Options{})
	if err := c.InitParams(context.Background(), map[string]Tensor{"w": Float32s([]float32{1})}, sgd); err != nil {
		t.Fatal(err)
	}
	fakes[0].pushReplies = []*pb.SendGradsResponse{{Outcome: pb.PushOutcome_PUSH_OUTCOME_DROPPED_LATE, Version: 9}}
	var report PushReport
	stepOf(t, c, func(s *StepContext) error {
		var err error
		report, err = s.SendGrads(map[string]Tensor{"w": Float32s([]float32{1})})
		return err
	})
	if len(report.Shards) != 1 || report.Shards[0].Outcome != pb.PushOutcome_PUSH_OUTCOME_DROPPED_LATE {
		t.Fatalf("report %+v, want the drop", report)
	}
	if step := stepOf(t, c, nothing); step != 10 {
		t.Errorf("the step after a drop at version 9 is %d, want 10", step)
	}
}

func TestALateAnswerNeverMovesTheNextStepPastOneAnotherShardWaitsFor(t *testing.T) {
	// A shard restored behind the job answers late; the other still waits for step 2.
	fakes := modeFakes(2, pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, nil)
	c := connectFakes(t, fakes, Options{})
	if err := c.InitParams(context.Background(), map[string]Tensor{"w": Float32s([]float32{1})}, sgd); err != nil {
		t.Fatal(err)
	}
	home := ShardOf("w", 2)
	fakes[home].pushReplies = []*pb.SendGradsResponse{{Outcome: pb.PushOutcome_PUSH_OUTCOME_DROPPED_LATE, Version: 9}}
	fakes[1-home].pushReplies = []*pb.SendGradsResponse{{Outcome: pb.PushOutcome_PUSH_OUTCOME_ACCUMULATED, Version: 0}}
	stepOf(t, c, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"w": Float32s([]float32{1})})
		return err
	})
	if step := stepOf(t, c, nothing); step != 2 {
		t.Errorf("the step after a drop by a shard ahead of the others is %d, want 2", step)
	}
}

func TestUnderSyncAndSSPAStepTellsEveryShardItDidNotPushToThatItIsDone(t *testing.T) {
	for _, mode := range []pb.ConsistencyMode{pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, pb.ConsistencyMode_CONSISTENCY_MODE_BOUNDED_STALENESS} {
		fakes := modeFakes(3, mode, nil)
		c := connectFakes(t, fakes, Options{})
		if err := c.InitParams(context.Background(), map[string]Tensor{"w": Float32s([]float32{1})}, sgd); err != nil {
			t.Fatal(err)
		}
		home := ShardOf("w", 3)
		stepOf(t, c, func(s *StepContext) error {
			_, err := s.SendGrads(map[string]Tensor{"w": Float32s([]float32{1})}, SampleCount(2))
			return err
		})
		// A step whose data ran out pushes nothing itself.
		stepOf(t, c, nothing)
		for shard, f := range fakes {
			want := []string{"1 0 0", "2 0 0"}
			if shard == home {
				want = []string{"1 2 1", "2 0 0"}
			}
			if got := pushesOf(f); !reflect.DeepEqual(got, want) {
				t.Errorf("%s shard %d: pushes %v, want %v", mode, shard, got, want)
			}
		}
	}
}

func TestSkipTellsOnlyTheShardsNotPushedToAndTheStepSendsNothingMore(t *testing.T) {
	fakes := modeFakes(3, pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, nil)
	c := connectFakes(t, fakes, Options{})
	if err := c.InitParams(context.Background(), map[string]Tensor{"w": Float32s([]float32{1})}, sgd); err != nil {
		t.Fatal(err)
	}
	home := ShardOf("w", 3)
	var skipped PushReport
	stepOf(t, c, func(s *StepContext) error {
		if _, err := s.SendGrads(map[string]Tensor{"w": Float32s([]float32{1})}); err != nil {
			return err
		}
		var err error
		skipped, err = s.Skip()
		return err
	})
	var want []int
	for shard := 0; shard < 3; shard++ {
		if shard != home {
			want = append(want, shard)
		}
	}
	var got []int
	for _, p := range skipped.Shards {
		got = append(got, p.Shard)
		if p.Outcome != pb.PushOutcome_PUSH_OUTCOME_APPLIED {
			t.Errorf("shard %d: outcome %s, want the fake's applied", p.Shard, p.Outcome)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Skip reported shards %v, want %v", got, want)
	}
	for shard, f := range fakes {
		if n := len(pushesOf(f)); n != 1 {
			t.Errorf("shard %d got %d pushes, want 1 (Skip's or the gradients, and no second at the step's end)", shard, n)
		}
	}
}

func TestUnderAsyncAStepPushesNothingMore(t *testing.T) {
	fakes := modeFakes(3, pb.ConsistencyMode_CONSISTENCY_MODE_ASYNC, nil)
	c := connectFakes(t, fakes, Options{})
	if err := c.InitParams(context.Background(), map[string]Tensor{"w": Float32s([]float32{1})}, sgd); err != nil {
		t.Fatal(err)
	}
	stepOf(t, c, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"w": Float32s([]float32{1})})
		return err
	})
	stepOf(t, c, nothing)
	home := ShardOf("w", 3)
	for shard, f := range fakes {
		var want []string
		if shard == home {
			want = []string{"1 - 1"}
		}
		if got := pushesOf(f); !reflect.DeepEqual(got, want) {
			t.Errorf("shard %d: pushes %v, want %v", shard, got, want)
		}
	}
}
