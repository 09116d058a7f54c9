package pserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// SetDataset sets the job's dataset (files: globs and task bytes; or records). Every trainer may
// call it: only the first counts, the same one again is acknowledged (AlreadySet), a different
// one is refused (FAILED_PRECONDITION, MASTER_DATASET_ALREADY_SET).
func (c *Client) SetDataset(ctx context.Context, req *pb.SetDatasetRequest) (reply *pb.SetDatasetResponse, err error) {
	if c.master == nil {
		return nil, clientError(codes.FailedPrecondition, pb.ErrorCode_CLIENT_NO_MASTER, nil, "SetDataset: datasets need a master")
	}
	err = c.master.call(ctx, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
		reply, err = m.SetDataset(ctx, req, o...)
		return err
	})
	return reply, err
}

// FinishJob says this trainer is done with the job, which finishes once trainers trainers (this
// one included, each counted once by name) said so; 0 or 1: at once. A finished job's pservers
// commit a final checkpoint and exit: read what you need first. It reports whether the job is
// finished now.
func (c *Client) FinishJob(ctx context.Context, trainers uint32) (finished bool, err error) {
	if c.master == nil {
		return false, clientError(codes.FailedPrecondition, pb.ErrorCode_CLIENT_NO_MASTER, nil, "FinishJob: needs a master (standalone pservers have no job to finish)")
	}
	c.mu.Lock()
	id := c.trainerID
	c.mu.Unlock()
	var reply *pb.FinishJobResponse
	err = c.master.call(ctx, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
		reply, err = m.FinishJob(ctx, &pb.FinishJobRequest{Context: &pb.RequestContext{TrainerId: id}, Trainers: trainers}, o...)
		return err
	})
	if reply.GetFinished() {
		c.mu.Lock()
		c.jobFinished = true
		c.mu.Unlock()
	}
	return reply.GetFinished(), err
}

// Task is a piece of the dataset handed to this trainer: a byte range of a line file (File), or
// a range of record indices (Records).
type Task struct {
	ID uint64
	// Dispatch is this hand-out's number: reports carry it, the master ignores older ones.
	Dispatch uint64
	Pass     uint64
	File     *pb.FileRange
	Records  *pb.RecordRange
	// Consumed counts the records read through ReadLines, for the task's report.
	Consumed uint64
}

// ReadLines calls fn with each line of a file task (the lines that begin in its byte range;
// across a pass's tasks, every line of every file exactly once), counting them.
func (t *Task) ReadLines(fn func(line string) error) error {
	if t.File == nil {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_NOT_A_FILE_TASK, nil, "task %d: a range of records; use Task.Records", t.ID)
	}
	return ReadLines(t.File.GetPath(), int64(t.File.GetStart()), int64(t.File.GetEnd()), func(line string) error {
		t.Consumed++
		return fn(line)
	})
}

// TaskIterator hands out the tasks of one pass to this trainer until the pass is over:
//
//	it := client.Tasks(pass)
//	defer it.Close()
//	for it.Next(ctx) {
//		task := it.Task() // … train on it
//	}
//	if err := it.Err(); err != nil { … }
//
// Next reports the previous task finished before asking for the next; Fail reports the current
// one failed, and Close reports a task still held failed, so the master gives it to another
// trainer at once.
type TaskIterator struct {
	c       *Client
	pass    uint64
	current *Task
	err     error
	done    bool
}

// Tasks iterates over the tasks of pass; steps taken meanwhile are stamped with it.
func (c *Client) Tasks(pass uint64) *TaskIterator {
	c.SetPass(pass)
	return &TaskIterator{c: c, pass: pass}
}

// Task is the task Next got.
func (it *TaskIterator) Task() *Task { return it.current }

// Err is what ended the iteration early, nil when the pass was over.
func (it *TaskIterator) Err() error { return it.err }

// Next reports the current task finished, then waits for the next task of the pass: false when
// the pass is over (Err nil) or on an error (Err).
func (it *TaskIterator) Next(ctx context.Context) bool {
	if it.done {
		return false
	}
	if it.c.master == nil {
		return it.fail(clientError(codes.FailedPrecondition, pb.ErrorCode_CLIENT_NO_MASTER, nil, "Tasks: datasets need a master"))
	}
	if it.current != nil {
		task := it.current
		it.current = nil
		records := task.Consumed
		if records == 0 && task.Records != nil {
			records = task.Records.GetEnd() - task.Records.GetStart()
		}
		if err := it.report(ctx, task, func(m pb.MasterClient, ctx context.Context, rc *pb.RequestContext, o []grpc.CallOption) error {
			_, err := m.TaskFinished(ctx, &pb.TaskFinishedRequest{Context: rc, TaskId: task.ID, Dispatch: task.Dispatch, Records: records}, o...)
			return err
		}); err != nil {
			return it.fail(err)
		}
	}
	// One id per task asked for, kept until a task comes: a GetTask whose reply was lost (the
	// master died after committing the hand-out) and that is sent again gets that same task,
	// instead of leaving it pending under this live trainer until its timeout.
	requestID := newRequestID()
	for expired := 0; ; {
		var reply *pb.GetTaskResponse
		err := it.c.master.call(ctx, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
			var err error
			rc := &pb.RequestContext{TrainerId: it.c.TrainerID(), Pass: it.pass}
			reply, err = m.GetTask(ctx, &pb.GetTaskRequest{Context: rc, RequestId: requestID}, o...)
			return err
		})
		switch {
		case errors.Is(err, ErrMasterSessionExpired) && expired < 20:
			// The session ended (a long pause): the keep-alive registers again under a new id.
			expired++
			reply = &pb.GetTaskResponse{RetryAfterMs: 250}
		case err != nil:
			return it.fail(err)
		}
		if reply.GetOutcome() == pb.GetTaskOutcome_GET_TASK_OUTCOME_PASS_OVER {
			it.done = true
			return false
		}
		if reply.GetOutcome() == pb.GetTaskOutcome_GET_TASK_OUTCOME_TASK && reply.GetTask() != nil {
			t := reply.GetTask()
			it.current = &Task{ID: t.GetId(), Dispatch: t.GetDispatch(), Pass: t.GetPass(), File: t.GetFile(), Records: t.GetRecords()}
			return true
		}
		// Not started, none available now, no dataset yet: ask again after the master's hint. Under
		// SYNC and SSP an idle trainer takes an empty step (a zero-sample contribution) meanwhile,
		// so that no step of the others waits for it.
		if it.c.View().Consistency != ConsistencyAsync {
			if err := it.c.Step(ctx, func(*StepContext) error { return nil }); err != nil {
				return it.fail(err)
			}
		}
		wait := time.Duration(reply.GetRetryAfterMs()) * time.Millisecond
		if wait == 0 {
			wait = 500 * time.Millisecond
		}
		if err := sleep(ctx, wait); err != nil {
			return it.fail(err)
		}
	}
}

// Fail reports the current task failed (it returns to the queue, or is set aside after too many
// failures); the next Next asks for another.
func (it *TaskIterator) Fail(ctx context.Context, reason string) error {
	task := it.current
	if task == nil {
		return nil
	}
	it.current = nil
	return it.report(ctx, task, func(m pb.MasterClient, ctx context.Context, rc *pb.RequestContext, o []grpc.CallOption) error {
		_, err := m.TaskFailed(ctx, &pb.TaskFailedRequest{Context: rc, TaskId: task.ID, Dispatch: task.Dispatch, Reason: reason}, o...)
		return err
	})
}

// Close ends the iteration; a task still held is reported failed.
func (it *TaskIterator) Close() error {
	it.done = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return it.Fail(ctx, "the trainer stopped before finishing the task")
}

func (it *TaskIterator) report(ctx context.Context, task *Task, fn func(pb.MasterClient, context.Context, *pb.RequestContext, []grpc.CallOption) error) error {
	return it.c.master.call(ctx, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
		return fn(m, ctx, &pb.RequestContext{TrainerId: it.c.TrainerID(), Pass: task.Pass}, o)
	})
}

func (it *TaskIterator) fail(err error) bool {
	it.err = err
	it.done = true
	return false
}

// newRequestID is 128 random bits in hex: unique per trainer without coordination.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on the platforms Go supports
	return hex.EncodeToString(b[:])
}
