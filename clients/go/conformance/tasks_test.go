//go:build integration

package conformance

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
)

// TestTasks runs the raw GetTask outcome sequence, then the client's task iteration: pass 1
// shared with the raw trainer (which holds one task, so the client must wait for it), and pass 2
// over two clients at once. Across the trainers each pass yields every task exactly once.
func TestTasks(t *testing.T) {
	s := loadScenarios(t)
	sc := s.Tasks
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	client := connect(t, ctx, c, "tasks-0")
	records := sc.Dataset.Records
	reply, err := client.SetDataset(ctx, &pb.SetDatasetRequest{Source: &pb.SetDatasetRequest_Records{
		Records: &pb.RecordDataset{Records: records.Records, TaskRecords: records.TaskRecords},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tasksPerPass := int(reply.GetTasks())
	if tasksPerPass != 4 {
		t.Fatalf("SetDataset: %d tasks per pass, want 4", tasksPerPass)
	}

	// A raw trainer, its session kept alive while the test runs.
	master := pb.NewMasterClient(dial(t, c.Masters[0]))
	registered, err := master.RegisterTrainer(ctx, &pb.RegisterTrainerRequest{Name: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	raw := registered.GetTrainerId()
	keepAlive(t, ctx, master, raw, time.Duration(registered.GetSessionTtlMs())*time.Millisecond/3)
	getTask := func(pass uint64) *pb.GetTaskResponse {
		t.Helper()
		reply, err := master.GetTask(ctx, &pb.GetTaskRequest{Context: &pb.RequestContext{TrainerId: raw, Pass: pass}})
		if err != nil {
			t.Fatalf("GetTask pass %d: %v", pass, err)
		}
		return reply
	}
	finish := func(task *pb.Task) {
		t.Helper()
		_, err := master.TaskFinished(ctx, &pb.TaskFinishedRequest{
			Context: &pb.RequestContext{TrainerId: raw, Pass: task.GetPass()}, TaskId: task.GetId(), Dispatch: task.GetDispatch(), Records: 1,
		})
		if err != nil {
			t.Fatalf("TaskFinished %d: %v", task.GetId(), err)
		}
	}

	var held []*pb.Task
	for i, step := range sc.Sequence {
		switch {
		case step.GetTask != nil:
			reply := getTask(step.GetTask.Pass)
			if got := reply.GetOutcome().String(); got != step.Outcome {
				t.Fatalf("sequence %d: GetTask pass %d = %s, want %s", i, step.GetTask.Pass, got, step.Outcome)
			}
			if reply.GetTask() != nil {
				held = append(held, reply.GetTask())
			}
		case step.Take > 0:
			ids := map[uint64]bool{}
			for k := 0; k < step.Take; k++ {
				reply := getTask(step.Pass)
				if reply.GetOutcome() != pb.GetTaskOutcome_GET_TASK_OUTCOME_TASK {
					t.Fatalf("sequence %d: take %d = %s, want a task", i, k, reply.GetOutcome())
				}
				ids[reply.GetTask().GetId()] = true
				held = append(held, reply.GetTask())
			}
			for id := uint64(0); id < uint64(step.Take); id++ {
				if !ids[id] {
					t.Fatalf("sequence %d: task ids %v, want 0-%d", i, ids, step.Take-1)
				}
			}
		case step.FinishAll:
			for _, task := range held {
				finish(task)
			}
			held = nil
		default:
			t.Fatalf("sequence %d: a step this runner does not know", i)
		}
	}

	// Pass 1: the raw trainer still holds its task; the client takes the others, then waits
	// (NO_TASK_AVAILABLE) until the raw trainer finishes it, and the pass is over.
	if len(held) != 1 || held[0].GetPass() != 1 {
		t.Fatalf("after the sequence the raw trainer holds %v, want one task of pass 1", held)
	}
	seen := []uint64{held[0].GetId()}
	ids := make(chan uint64)
	iterated := make(chan error, 1)
	go func() {
		defer close(ids)
		iterated <- iterate(ctx, client, 1, func(task *pserver.Task) { ids <- task.ID })
	}()
	for k := 0; k < tasksPerPass-1; k++ {
		seen = append(seen, <-ids)
	}
	finish(held[0])
	for id := range ids {
		seen = append(seen, id)
	}
	if err := <-iterated; err != nil {
		t.Fatalf("pass 1: %v", err)
	}
	expectEveryTaskOnce(t, "pass 1", seen, tasksPerPass)

	// Pass 2: two clients at once.
	second := connect(t, ctx, c, "tasks-1")
	var mu sync.Mutex
	seen = nil
	var wg sync.WaitGroup
	for _, cl := range []*pserver.Client{client, second} {
		wg.Add(1)
		go func(cl *pserver.Client) {
			defer wg.Done()
			err := iterate(ctx, cl, 2, func(task *pserver.Task) {
				mu.Lock()
				seen = append(seen, task.ID)
				mu.Unlock()
			})
			if err != nil {
				t.Errorf("pass 2, trainer %d: %v", cl.TrainerID(), err)
			}
		}(cl)
	}
	wg.Wait()
	expectEveryTaskOnce(t, "pass 2", seen, tasksPerPass)

	// Pass 3: a GetTask sent again with the same request id (as after a lost reply) gets the task
	// it took, same dispatch; another id takes another task.
	getTaskAs := func(requestID string) *pb.Task {
		t.Helper()
		reply, err := master.GetTask(ctx, &pb.GetTaskRequest{Context: &pb.RequestContext{TrainerId: raw, Pass: 3}, RequestId: requestID})
		if err != nil || reply.GetOutcome() != pb.GetTaskOutcome_GET_TASK_OUTCOME_TASK {
			t.Fatalf("GetTask pass 3, request %s: %v %v", requestID, reply.GetOutcome(), err)
		}
		return reply.GetTask()
	}
	first, again, other := getTaskAs("retry-1"), getTaskAs("retry-1"), getTaskAs("retry-2")
	if again.GetId() != first.GetId() || again.GetDispatch() != first.GetDispatch() {
		t.Errorf("a retried GetTask got task %d dispatch %d, want %d dispatch %d", again.GetId(), again.GetDispatch(), first.GetId(), first.GetDispatch())
	}
	if other.GetId() == first.GetId() {
		t.Errorf("a new request id got task %d again", other.GetId())
	}
}

// iterate runs the client's task iteration of pass to its end, calling use with each task.
func iterate(ctx context.Context, client *pserver.Client, pass uint64, use func(*pserver.Task)) error {
	it := client.Tasks(pass)
	defer it.Close()
	for it.Next(ctx) {
		if it.Task().Pass != pass || it.Task().Records == nil {
			return &pserver.Error{Message: "a task of another pass, or not a record task"}
		}
		use(it.Task())
	}
	return it.Err()
}

func expectEveryTaskOnce(t *testing.T, what string, ids []uint64, tasks int) {
	t.Helper()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) != tasks {
		t.Errorf("%s: tasks %v, want each of 0-%d once", what, ids, tasks-1)
		return
	}
	for i, id := range ids {
		if id != uint64(i) {
			t.Errorf("%s: tasks %v, want each of 0-%d once", what, ids, tasks-1)
			return
		}
	}
}

// keepAlive keeps a raw trainer's session alive until the test ends.
func keepAlive(t *testing.T, ctx context.Context, master pb.MasterClient, id uint64, period time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		ticker := time.NewTicker(period)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				_, _ = master.KeepAlive(ctx, &pb.KeepAliveRequest{TrainerId: id})
			}
		}
	}()
}
