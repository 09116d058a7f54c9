package pserver

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/protobuf/proto"
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

// stepOne is three SYNC fakes and trainer 1's client after its first step (pass 4): w (two
// elements, on shard home) pushed with a sample count of 3, a skip to the other shards. sent is
// each shard's push of it; the fakes' records are cleared after it, and the next step's pass is 5.
type stepOne struct {
	fakes []*fakePserver
	c     *Client
	home  int
	sent  []*pb.SendGradsRequest
}

func syncStepOne(t *testing.T, grad Tensor) stepOne {
	t.Helper()
	fakes := modeFakes(3, pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, nil)
	c := connectFakes(t, fakes, Options{TrainerID: 1})
	if err := c.InitParams(context.Background(), map[string]Tensor{"w": Float32s([]float32{1, 2})}, sgd); err != nil {
		t.Fatal(err)
	}
	c.SetPass(4)
	if step := stepOf(t, c, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"w": grad}, SampleCount(3))
		return err
	}); step != 1 {
		t.Fatalf("the first step is %d, want 1", step)
	}
	c.SetPass(5)
	r := stepOne{fakes: fakes, c: c, home: ShardOf("w", 3)}
	for shard, f := range fakes {
		f.mu.Lock()
		if len(f.unary) != 1 {
			t.Fatalf("shard %d: %d pushes in step 1, want 1", shard, len(f.unary))
		}
		r.sent = append(r.sent, f.unary[0])
		f.unary, f.stamps = nil, nil
		f.mu.Unlock()
	}
	return r
}

// resent checks that push is shard's push of step 1 again: the same bytes, sample count and
// identity (trainer 1, pass 4, step 1), stamped with the shard's epoch in the client's view.
func (r stepOne) resent(t *testing.T, shard int, push *pb.SendGradsRequest) {
	t.Helper()
	want := &pb.RequestContext{TrainerId: 1, Pass: 4, Step: 1, ShardEpoch: r.c.View().Shard(shard).Epoch}
	if !proto.Equal(push.GetContext(), want) {
		t.Errorf("shard %d: re-sent with %v, want %v", shard, push.GetContext(), want)
	}
	if !proto.Equal(push, r.sent[shard]) {
		t.Errorf("shard %d: re-sent %v, want step 1's push %v as it was", shard, push, r.sent[shard])
	}
}

func stampsOf(f *fakePserver) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.stamps...)
}

func TestAReadAnsweredResendStepSendsTheKeptPushToThatShardThenReadsAgain(t *testing.T) {
	r := syncStepOne(t, Float32s([]float32{0.5, 0.25}))
	r.fakes[r.home].resendAsks = map[uint64]int{2: 1}
	var got map[string]Tensor
	stepOf(t, r.c, func(s *StepContext) error {
		var err error
		got, err = s.GetParams("w")
		return err
	})
	if w := got["w"].Float32s(); !reflect.DeepEqual(w, []float32{1, 2}) {
		t.Errorf("read %v, want [1 2]", w)
	}
	for shard, f := range r.fakes {
		want := []string{"SendGrads 2"}
		if shard == r.home {
			want = []string{"GetParams 2 resend", "SendGrads 1", "GetParams 2", "SendGrads 2"}
		}
		if got := stampsOf(f); !reflect.DeepEqual(got, want) {
			t.Errorf("shard %d: calls %v, want %v", shard, got, want)
		}
	}
	r.resent(t, r.home, r.fakes[r.home].unary[0])
	if got := pushesOf(r.fakes[r.home]); !reflect.DeepEqual(got, []string{"1 3 1", "2 0 0"}) {
		t.Errorf("home pushes %v, want step 1's push again, then step 2's skip", got)
	}
}

func TestASkipAnsweredResendStepSendsTheKeptPushAndKeepsItsReport(t *testing.T) {
	r := syncStepOne(t, Float32s([]float32{0.5, 0.25}))
	other := (r.home + 1) % 3
	for _, shard := range []int{r.home, other} {
		r.fakes[shard].resendAsks = map[uint64]int{2: 1}
		// The re-send's outcome is no part of step 2's report.
		r.fakes[shard].pushReplies = []*pb.SendGradsResponse{{Outcome: pb.PushOutcome_PUSH_OUTCOME_DUPLICATE, Version: 7}}
	}
	var report PushReport
	stepOf(t, r.c, func(s *StepContext) error {
		var err error
		report, err = s.Skip()
		return err
	})
	for shard, f := range r.fakes {
		want := []string{"SendGrads 2"}
		if shard == r.home || shard == other {
			want = []string{"SendGrads 2 resend", "SendGrads 1", "SendGrads 2"}
			r.resent(t, shard, f.unary[0])
		}
		if got := stampsOf(f); !reflect.DeepEqual(got, want) {
			t.Errorf("shard %d: calls %v, want %v", shard, got, want)
		}
	}
	if got := pushesOf(r.fakes[other]); !reflect.DeepEqual(got, []string{"1 0 0", "2 0 0"}) {
		t.Errorf("shard %d: pushes %v, want step 1's skip again (a sample count of 0), then step 2's", other, got)
	}
	for _, p := range report.Shards {
		if p.Outcome != pb.PushOutcome_PUSH_OUTCOME_APPLIED || p.Version != 0 {
			t.Errorf("shard %d: reported %s (version %d), want the skip's own applied", p.Shard, p.Outcome, p.Version)
		}
	}
	if len(report.Shards) != 3 {
		t.Errorf("report of %d shards, want 3", len(report.Shards))
	}
}

func TestTheKeptPushIsACopyOfTheGradientsBytes(t *testing.T) {
	grad := Float32s([]float32{0.5, 0.25})
	sent := append([]byte(nil), grad.Data...)
	r := syncStepOne(t, grad)
	for i := range grad.Data {
		grad.Data[i] = 0xff // the trainer reuses its buffer for the next step
	}
	r.fakes[r.home].resendAsks = map[uint64]int{2: 1}
	stepOf(t, r.c, func(s *StepContext) error {
		_, err := s.GetParams("w")
		return err
	})
	resent := r.fakes[r.home].unary[0]
	if len(resent.GetGrads()) != 1 || !reflect.DeepEqual(resent.GetGrads()[0].GetContent(), sent) {
		t.Errorf("re-sent %v, want the bytes of step 1 (%v), not the buffer reused since", resent.GetGrads(), sent)
	}
}

func TestWithoutAKeptPushAZeroSamplePushOfTheStepBeforeIsSent(t *testing.T) {
	t.Run("the trainer's first step", func(t *testing.T) {
		// The shards closed 4 steps: the trainer joins at step 5.
		fakes := modeFakes(3, pb.ConsistencyMode_CONSISTENCY_MODE_SYNC, func(_ int, status *pb.GetShardStatusResponse) {
			status.Version = 4
		})
		c := connectFakes(t, fakes, Options{TrainerID: 2})
		c.SetPass(3)
		fakes[1].resendAsks = map[uint64]int{5: 1}
		if step := stepOf(t, c, nothing); step != 5 {
			t.Fatalf("the first step is %d, want 5", step)
		}
		zeroSamplePushOf(t, fakes[1], &pb.RequestContext{TrainerId: 2, Pass: 3, Step: 4, ShardEpoch: 3})
	})
	t.Run("a new trainer id", func(t *testing.T) {
		r := syncStepOne(t, Float32s([]float32{0.5, 0.25}))
		// The session expired and was registered again: step 1 was another trainer's.
		r.c.mu.Lock()
		r.c.trainerID = 9
		r.c.mu.Unlock()
		r.fakes[r.home].resendAsks = map[uint64]int{2: 1}
		stepOf(t, r.c, nothing)
		zeroSamplePushOf(t, r.fakes[r.home], &pb.RequestContext{TrainerId: 9, Pass: 5, Step: 1, ShardEpoch: 3})
	})
}

// zeroSamplePushOf checks that f got a zero-sample push stamped rc, then the step's own skip.
func zeroSamplePushOf(t *testing.T, f *fakePserver, rc *pb.RequestContext) {
	t.Helper()
	want := []string{fmt.Sprintf("%d 0 0", rc.GetStep()), fmt.Sprintf("%d 0 0", rc.GetStep()+1)}
	if got := pushesOf(f); !reflect.DeepEqual(got, want) {
		t.Fatalf("pushes %v, want %v: a zero-sample push of the step before, then the step's skip", got, want)
	}
	if got := f.unary[0].GetContext(); !proto.Equal(got, rc) {
		t.Errorf("the zero-sample push carried %v, want %v", got, rc)
	}
}

func TestResendStepIsServedOncePerCall(t *testing.T) {
	t.Run("a second ask for the same call", func(t *testing.T) {
		r := syncStepOne(t, Float32s([]float32{0.5, 0.25}))
		r.fakes[r.home].resendAsks = map[uint64]int{2: 2}
		err := r.c.Step(context.Background(), func(s *StepContext) error {
			_, err := s.GetParams("w")
			return err
		})
		if !errors.Is(err, ErrResendStep) {
			t.Fatalf("got %v, want the second PSERVER_RESEND_STEP", err)
		}
		want := []string{"GetParams 2 resend", "SendGrads 1", "GetParams 2 resend"}
		if got := stampsOf(r.fakes[r.home]); !reflect.DeepEqual(got, want) {
			t.Errorf("calls %v, want %v", got, want)
		}
	})
	t.Run("an ask for the re-send", func(t *testing.T) {
		r := syncStepOne(t, Float32s([]float32{0.5, 0.25}))
		r.fakes[r.home].resendAsks = map[uint64]int{2: 1, 1: 1}
		err := r.c.Step(context.Background(), func(s *StepContext) error {
			_, err := s.GetParams("w")
			return err
		})
		if !errors.Is(err, ErrResendStep) {
			t.Fatalf("got %v, want the re-send's PSERVER_RESEND_STEP", err)
		}
		want := []string{"GetParams 2 resend", "SendGrads 1 resend"}
		if got := stampsOf(r.fakes[r.home]); !reflect.DeepEqual(got, want) {
			t.Errorf("calls %v, want %v: the re-send sends nothing of its own", got, want)
		}
	})
}

func TestReadsOutsideAStepKeepTheLastStepsPushes(t *testing.T) {
	r := syncStepOne(t, Float32s([]float32{0.5, 0.25}))
	ctx := context.Background()
	if _, err := r.c.GetParams(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.ListParams(ctx); err != nil {
		t.Fatal(err)
	}
	r.fakes[r.home].resendAsks = map[uint64]int{2: 1}
	stepOf(t, r.c, func(s *StepContext) error {
		_, err := s.GetParams("w")
		return err
	})
	r.resent(t, r.home, r.fakes[r.home].unary[0])
}

func TestEachStepThatWentThroughReplacesTheKeptPushes(t *testing.T) {
	r := syncStepOne(t, Float32s([]float32{0.5, 0.25}))
	stepOf(t, r.c, func(s *StepContext) error {
		_, err := s.SendGrads(map[string]Tensor{"w": Float32s([]float32{2, 4})}, SampleCount(1))
		return err
	})
	r.fakes[r.home].resendAsks = map[uint64]int{3: 1}
	stepOf(t, r.c, nothing)
	home := r.fakes[r.home]
	if got := pushesOf(home); !reflect.DeepEqual(got, []string{"2 1 1", "2 1 1", "3 0 0"}) {
		t.Fatalf("home pushes %v, want step 2's push, the same again, then step 3's skip", got)
	}
	if !proto.Equal(home.unary[1], home.unary[0]) {
		t.Errorf("re-sent %v, want step 2's push %v", home.unary[1], home.unary[0])
	}
}
