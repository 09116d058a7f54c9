package pserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// Options configure Connect. Give Master (replica addresses; the client follows the leader) or
// Pservers (standalone: the pservers in index order, no master).
type Options struct {
	Master   []string
	Pservers []string
	// Name is this trainer's name in the master's Status and logs (default trainer-<pid>).
	Name string
	// Observer (with a master) is a client that reads and never takes steps (an evaluator, a
	// tool): SYNC and SSP steps do not wait for it; the pservers refuse its step pushes.
	Observer bool
	// NotInitializer (standalone only) says another trainer initializes the parameters.
	NotInitializer bool
	// TrainerID (standalone only; the master issues ids otherwise) is this trainer's id, at most
	// MaxTrainerID. A SYNC or SSP job counts trainers 1..N (the pservers' --sync-trainers), so
	// each trainer of such a job gives its own and keeps it across restarts. 0: a random id.
	TrainerID uint64
	// BlockSize (standalone only) is the block size in elements; the master publishes it otherwise.
	BlockSize int
	// CallTimeout is each call's deadline (default 30 s; master calls 10 s).
	CallTimeout time.Duration
	// GlobalClipNorm, when above 0, clips each push's FLOAT32 and FLOAT64 gradients together:
	// when their L2 norm is above it, every one is scaled by GlobalClipNorm / norm before it is
	// split, bit for bit as the TypeScript and Python clients do (proto/README.md, "Global-norm
	// clipping"). 0: no clipping; negative, NaN or infinite: Connect fails with
	// CLIENT_INVALID_OPTIONS.
	GlobalClipNorm float64
	// StepTimeout is a step's deadline, all its runs, retries and waits for a served shard
	// included (default 5 min): a step fails with ErrClientStepFailed only when it passes.
	StepTimeout time.Duration
	// MaxMessageBytes caps a gRPC message (default 64 MiB): a pull is split into calls whose
	// replies stay below half of it, a bigger push is streamed, and a block larger than it is
	// CLIENT_MESSAGE_TOO_LARGE.
	MaxMessageBytes int
	// TLS connects to every master and pserver with TLS, with a client certificate for mutual
	// TLS (nil: plaintext). LoadSecurity reads it from files.
	TLS *TLSOptions
	// Token is sent as `authorization: Bearer <token>` with every call. It needs TLS: Connect
	// refuses a token without it (ErrClientInvalidSecurity).
	Token string
}

// Client is a trainer's connection to a job. InitParams, Step and GetParams take and return whole
// tensors; placement, splitting into blocks, fan-out and reassembly are the client's. It is safe
// for concurrent use, though a trainer usually runs one step at a time.
type Client struct {
	opts   Options
	conns  *connPool
	calls  *shardCalls
	master *masterLink
	// background ends the keep-alive and watch goroutines on Close.
	background context.Context
	stop       context.CancelFunc
	wg         sync.WaitGroup

	mu        sync.Mutex
	view      View
	viewMoved chan struct{} // closed and replaced whenever the view changes
	trainerID uint64
	nextStep  uint64
	// stepFloor is the least number the next step takes: where the shards say this trainer goes on.
	stepFloor uint64
	// floorFor is the trainer id the step floor was last read from every shard for (cluster SYNC
	// and SSP).
	floorFor uint64
	pass     uint64
	specs    map[string]spec
	tables   *tableDirectory
	contexts map[*StepContext]struct{}
	closed   bool
	// jobFinished: FinishJob answered that the job is finished, so Close does not unregister (the
	// job's masters leave once its pservers have).
	jobFinished bool
	// lastStepPushes holds, under SYNC, the pushes of the trainer's last step that went through
	// on every shard, until the next one does: a shard that failed over without them asks again.
	lastStepPushes *stepPushes
}

// MaxTrainerID is the largest trainer id: the pservers read ids as IEEE doubles, exact up to 2^53.
const MaxTrainerID = 1<<53 - 1

// Connect connects a trainer to a job: through the master (registering the trainer, keeping its
// session alive and watching the cluster view) or, with Options.Pservers, to fixed pservers.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	opts = withDefaults(opts)
	if opts.TrainerID > MaxTrainerID {
		return nil, clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_INVALID_OPTIONS, nil, "TrainerID: must be a whole number from 1 to %d, got %d", uint64(MaxTrainerID), opts.TrainerID)
	}
	if err := checkGlobalClipNorm(opts.GlobalClipNorm); err != nil {
		return nil, err
	}
	security, err := DialOptions(opts.TLS, opts.Token)
	if err != nil {
		return nil, err
	}
	conns := newConnPool(opts.MaxMessageBytes, security)
	c := &Client{
		opts:      opts,
		conns:     conns,
		calls:     &shardCalls{conns: conns, timeout: opts.CallTimeout, maxMessageBytes: opts.MaxMessageBytes, streamChunkBytes: 4 << 20},
		viewMoved: make(chan struct{}),
		specs:     map[string]spec{},
		tables:    newTableDirectory(),
		contexts:  map[*StepContext]struct{}{},
		stepFloor: 1,
	}
	c.background, c.stop = context.WithCancel(context.Background())
	if len(opts.Master) > 0 {
		masterTimeout := 10 * time.Second
		if opts.CallTimeout < masterTimeout {
			masterTimeout = opts.CallTimeout
		}
		c.master = newMasterLink(opts.Master, masterTimeout, conns)
		registered, err := c.register(ctx)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.trainerID = registered.GetTrainerId()
		c.view = viewFromProto(registered.GetView())
		c.wg.Add(2)
		go c.keepSessionAlive(time.Duration(registered.GetSessionTtlMs()) * time.Millisecond)
		go func() {
			defer c.wg.Done()
			c.master.watch(c.background, func(v *pb.ClusterView) { c.applyView(viewFromProto(v)) })
		}()
		return c, nil
	}
	if len(opts.Pservers) == 0 {
		return nil, clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_NO_MASTER, nil, "connect: give master addresses or pserver addresses")
	}
	shards := make([]ShardRoute, len(opts.Pservers))
	for i, address := range opts.Pservers {
		shards[i] = ShardRoute{Index: i, Address: address}
	}
	c.view = View{ShardCount: len(shards), BlockSize: opts.BlockSize, Shards: shards}
	// Standalone trainers have no registry: the id given, or a random one, unlikely to meet
	// another trainer's.
	c.trainerID = opts.TrainerID
	if c.trainerID == 0 {
		c.trainerID = uint64(rand.Int63n(1<<48-1)) + 1
	}
	if err := c.refreshView(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func withDefaults(o Options) Options {
	if o.Name == "" {
		o.Name = fmt.Sprintf("trainer-%d", os.Getpid())
	}
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = 5 * time.Minute
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 64 << 20
	}
	return o
}

// TrainerID is the id the master issued to this trainer (a new one if its session had ended).
func (c *Client) TrainerID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trainerID
}

// View is the cluster view as the client knows it now.
func (c *Client) View() View {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.view
}

// MasterAddress is the master replica the client talks to now ("" standalone).
func (c *Client) MasterAddress() string {
	if c.master == nil {
		return ""
	}
	return c.master.address()
}

// Pass is the dataset pass steps are stamped with (Tasks sets it).
func (c *Client) Pass() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pass
}

// SetPass sets the dataset pass steps are stamped with.
func (c *Client) SetPass(pass uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pass = pass
}

func (c *Client) spec(name string) (spec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sp, ok := c.specs[name]
	if !ok {
		return spec{}, clientError(codes.NotFound, pb.ErrorCode_CLIENT_UNKNOWN_TENSOR, nil, "tensor %s: neither declared (InitParams) nor held by the shards (ListParams)", name)
	}
	return sp, nil
}

// Step runs one training step: fn gets a context that captured the view, the step's identity
// (this trainer's id, the next step number, the pass) and its deadline; every call through it is
// stamped with them. If the view changes under the step (a shard replaced, an epoch moved), fn
// runs again after a short jittered backoff with a fresh context and the same identity, so shards
// that already applied its push acknowledge it as a duplicate. Each run waits until every shard
// is served. Step fails with ErrClientStepFailed only when the step's deadline (StepTimeout) passes;
// errors that waiting cannot change are returned as they come. fn must return the context's
// errors (or wrap them) for this to work.
//
// Step numbers are never reset (also not when the session gets a new trainer id). Under SYNC a
// step's number is at least the open step of the shard furthest behind, under SSP past this
// trainer's last step on any shard: a trainer that (re)starts joins where the job is.
func (c *Client) Step(ctx context.Context, fn func(*StepContext) error) error {
	if err := c.learnStepFloor(ctx); err != nil {
		return err
	}
	return c.run(ctx, false, fn)
}

// learnStepFloor has a cluster trainer learn where the job's steps are before its first one (and
// again under a new id: a trainer registered again joins like a new one).
func (c *Client) learnStepFloor(ctx context.Context) error {
	c.mu.Lock()
	needed := c.master != nil && c.view.Consistency != ConsistencyAsync && c.floorFor != c.trainerID
	c.mu.Unlock()
	if !needed {
		return nil
	}
	if _, err := c.waitForCompleteView(ctx, time.Now().Add(c.opts.StepTimeout)); err != nil {
		return err
	}
	if err := c.refreshView(ctx); IsRefused(err) {
		return err
	}
	return nil
}

// read runs fn as a step numbered 0: reads and initialization outside training count as no step
// of the trainer's, and no read waits for one under SYNC or SSP.
func (c *Client) read(ctx context.Context, fn func(*StepContext) error) error {
	return c.run(ctx, true, fn)
}

func (c *Client) run(ctx context.Context, reading bool, fn func(*StepContext) error) error {
	c.mu.Lock()
	// The step's identity, captured once: a re-registration mid-step changes the trainer id for
	// later steps only.
	id := stepIdentity{trainerID: c.trainerID, pass: c.pass}
	if !reading {
		c.nextStep++
		if c.nextStep < c.stepFloor {
			c.nextStep = c.stepFloor
		}
		id.step = c.nextStep
	}
	c.mu.Unlock()
	deadline := time.Now().Add(c.opts.StepTimeout)
	var last error
	run := 0
	for time.Now().Before(deadline) {
		run++
		complete, err := c.waitForCompleteView(ctx, deadline)
		if err != nil {
			return err
		}
		if !complete {
			break
		}
		sc, err := c.begin(ctx, id, deadline)
		if err != nil {
			return err
		}
		err = fn(sc)
		if err == nil {
			// Rows staged without a SendGrads go out now, within this run: a stale view re-runs
			// fn, which stages them again under the same identity.
			err = sc.flush()
		}
		if err == nil && !reading {
			// Every shard took the step: the one before can no longer be asked for.
			c.keepStepPushes(sc.sent)
		}
		pastDeadline := sc.ctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		c.end(sc)
		if err == nil {
			return nil
		}
		if !(IsStale(err) || pastDeadline) || ctx.Err() != nil || c.isClosed() {
			return err
		}
		last = err
		if pause := backoff(run - 1); time.Until(deadline) > pause {
			if err := sleep(ctx, pause); err != nil {
				return err
			}
		}
		if err := c.refreshView(ctx); err != nil {
			if IsRefused(err) {
				return err
			}
			last = err
		}
	}
	return clientError(codes.DeadlineExceeded, pb.ErrorCode_CLIENT_STEP_FAILED, last, "step %d: not done within %s (%d runs; last: %v)", id.step, c.opts.StepTimeout, run, last)
}

// keepStepPushes keeps the pushes of a step that went through on every shard, in place of an
// earlier step's (steps run at once may be done out of order).
func (c *Client) keepStepPushes(pushes *stepPushes) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastStepPushes == nil || pushes.id.step >= c.lastStepPushes.id.step {
		c.lastStepPushes = pushes
	}
}

// lastStep is the pushes of the trainer's last step that went through (nil: none yet).
func (c *Client) lastStep() *stepPushes {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastStepPushes
}

// stepClosedWithout learns from a SYNC shard that it closed closedSteps steps, the last without
// this trainer's push: later steps start after them.
func (c *Client) stepClosedWithout(closedSteps uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if closedSteps+1 > c.stepFloor {
		c.stepFloor = closedSteps + 1
	}
}

func (c *Client) begin(ctx context.Context, id stepIdentity, deadline time.Time) (*StepContext, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, clientError(codes.Canceled, pb.ErrorCode_CLIENT_CLOSED, nil, "the client was closed")
	}
	sc := newStepContext(ctx, c, c.view, id, deadline)
	c.contexts[sc] = struct{}{}
	return sc, nil
}

func (c *Client) end(sc *StepContext) {
	sc.cancel()
	c.mu.Lock()
	delete(c.contexts, sc)
	c.mu.Unlock()
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// GetParams reads whole tensors outside a training step (a read numbered 0, which takes no step
// number and waits for no step under SYNC or SSP).
func (c *Client) GetParams(ctx context.Context, names ...string) (map[string]Tensor, error) {
	var out map[string]Tensor
	err := c.read(ctx, func(s *StepContext) error {
		var err error
		out, err = s.GetParams(names...)
		return err
	})
	return out, err
}

// Close ends the session (the master frees this trainer's tasks at once) and closes every
// connection. Steps in flight end with ErrClientClosed.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	reason := clientError(codes.Canceled, pb.ErrorCode_CLIENT_CLOSED, nil, "the client was closed")
	for sc := range c.contexts {
		sc.abort(reason)
	}
	id := c.trainerID
	finished := c.jobFinished
	c.mu.Unlock()
	c.stop()
	if c.master != nil && id != 0 && !finished {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = c.master.call(ctx, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
			_, err := m.UnregisterTrainer(ctx, &pb.UnregisterTrainerRequest{TrainerId: id}, o...)
			return err
		})
		cancel()
	}
	c.wg.Wait()
	c.conns.close()
}

func (c *Client) register(ctx context.Context) (reply *pb.RegisterTrainerResponse, err error) {
	err = c.master.call(ctx, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
		reply, err = m.RegisterTrainer(ctx, &pb.RegisterTrainerRequest{Name: c.opts.Name, Observer: c.opts.Observer}, o...)
		return err
	})
	return reply, err
}

// keepSessionAlive calls KeepAlive at a third of the session TTL; if the session ended anyway (a
// long pause), it registers again under a new id.
func (c *Client) keepSessionAlive(ttl time.Duration) {
	defer c.wg.Done()
	period := ttl / 3
	if period < 100*time.Millisecond {
		period = 100 * time.Millisecond
	}
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-c.background.Done():
			return
		case <-ticker.C:
		}
		id := c.TrainerID()
		err := c.master.call(c.background, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
			_, err := m.KeepAlive(ctx, &pb.KeepAliveRequest{TrainerId: id}, o...)
			return err
		})
		if errors.Is(err, ErrMasterSessionExpired) {
			if registered, err := c.register(c.background); err == nil {
				c.mu.Lock()
				c.trainerID = registered.GetTrainerId()
				c.mu.Unlock()
			}
		}
	}
}

// refreshView gets the current view: from the master, or standalone from each pserver's status,
// which also says the job's consistency mode. Under SYNC and SSP, once every shard answered its
// status, they also say where this trainer's steps go on.
func (c *Client) refreshView(ctx context.Context) error {
	if c.master != nil {
		var view *pb.ClusterView
		err := c.master.call(ctx, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
			var err error
			view, err = m.GetClusterView(ctx, &pb.GetClusterViewRequest{}, o...)
			return err
		})
		if err != nil {
			return err
		}
		next := viewFromProto(view)
		c.applyView(next)
		if next.Consistency != ConsistencyAsync && next.Complete() {
			id := c.TrainerID()
			statuses, err := c.statuses(ctx, next, id)
			if err != nil {
				return err
			}
			if answered := answeredOf(statuses); len(answered) == len(next.Shards) {
				c.raiseStepFloor(next.Consistency, answered)
				c.mu.Lock()
				c.floorFor = id
				c.mu.Unlock()
			}
		}
		return nil
	}
	next := c.View()
	next.Shards = append([]ShardRoute(nil), next.Shards...)
	statuses, err := c.statuses(ctx, next, c.TrainerID())
	if err != nil {
		return err
	}
	for i, status := range statuses {
		// A pserver answers its status only once it serves (recovering: PSERVER_NOT_SERVING).
		next.Shards[i].Epoch, next.Shards[i].Serving = 0, status != nil
		if status != nil {
			next.Shards[i].Epoch = status.GetShardEpoch()
		}
	}
	answered := answeredOf(statuses)
	if len(answered) > 0 {
		mode, err := consistencyOf(answered)
		if err != nil {
			return err
		}
		next.Consistency = mode
	}
	if len(answered) == len(next.Shards) {
		c.raiseStepFloor(next.Consistency, answered)
	}
	next.Revision++
	c.applyView(next)
	return nil
}

// statuses gets each shard's status with this trainer's last step on it; nil where none answered.
func (c *Client) statuses(ctx context.Context, view View, id uint64) ([]*pb.GetShardStatusResponse, error) {
	statuses := make([]*pb.GetShardStatusResponse, len(view.Shards))
	for i, s := range view.Shards {
		status, err := c.calls.status(ctx, s.Address, id)
		if IsRefused(err) {
			return nil, err // not a pserver still starting: this client may not call it
		}
		if err == nil {
			statuses[i] = status
		}
	}
	return statuses, nil
}

// answeredOf keeps the statuses that came.
func answeredOf(statuses []*pb.GetShardStatusResponse) []*pb.GetShardStatusResponse {
	var answered []*pb.GetShardStatusResponse
	for _, status := range statuses {
		if status != nil {
			answered = append(answered, status)
		}
	}
	return answered
}

// consistencyOf is the job's mode as the shards report it; they must agree (each is started with
// it), else CLIENT_INVALID_OPTIONS.
func consistencyOf(statuses []*pb.GetShardStatusResponse) (Consistency, error) {
	mode := consistencyOfMode(statuses[0].GetConsistency().GetMode())
	for _, status := range statuses[1:] {
		if other := consistencyOfMode(status.GetConsistency().GetMode()); other != mode {
			return 0, clientError(codes.FailedPrecondition, pb.ErrorCode_CLIENT_INVALID_OPTIONS, nil,
				"the pservers run different consistency modes (%s, %s): start every shard with the same --consistency", mode, other)
		}
	}
	return mode, nil
}

// raiseStepFloor moves the step floor to where the shards say this trainer goes on: SYNC at the
// open step of the shard furthest behind (its step may still wait for this trainer), SSP past
// this trainer's last step anywhere and never below the slowest member's clock (a trainer that
// joins a running job starts there).
func (c *Client) raiseStepFloor(mode Consistency, statuses []*pb.GetShardStatusResponse) {
	var floor uint64
	switch mode {
	case ConsistencySync:
		floor = statuses[0].GetVersion()
		for _, status := range statuses[1:] {
			if status.GetVersion() < floor {
				floor = status.GetVersion()
			}
		}
		floor++
	case ConsistencySSP:
		for _, status := range statuses {
			last := status.GetTrainerLastStep()
			if status.GetMinClock() > last {
				last = status.GetMinClock()
			}
			if last+1 > floor {
				floor = last + 1
			}
		}
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if floor > c.stepFloor {
		c.stepFloor = floor
	}
}

// staleShard learns from a context that shard's epoch moved. Standalone, the restarted pserver's
// answer is the only source of its new epoch; with a master the view will say.
func (c *Client) staleShard(shard int, epoch uint64) {
	if c.master != nil || epoch == 0 {
		return
	}
	next := c.View()
	next.Shards = append([]ShardRoute(nil), next.Shards...)
	if shard < len(next.Shards) {
		next.Shards[shard].Epoch, next.Shards[shard].Serving = epoch, true // it answered: it serves
	}
	next.Revision++
	c.applyView(next)
}

// applyView installs a newer view and ends the live steps whose shards changed.
func (c *Client) applyView(next View) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if next.Revision < c.view.Revision {
		return
	}
	changed := changedShards(c.view, next)
	c.view = next
	if len(changed) > 0 {
		reason := clientError(codes.Aborted, pb.ErrorCode_CLIENT_STALE_VIEW, nil, "shards %v changed", changed)
		for sc := range c.contexts {
			sc.abort(reason)
		}
	}
	close(c.viewMoved)
	c.viewMoved = make(chan struct{})
}

// waitForCompleteView waits until every shard is assigned and served (true), or deadline passes
// (false). The master's watch wakes it on every new view; without news it asks again.
func (c *Client) waitForCompleteView(ctx context.Context, deadline time.Time) (bool, error) {
	for {
		c.mu.Lock()
		complete, moved := c.view.Complete(), c.viewMoved
		c.mu.Unlock()
		if complete {
			return true, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		if left > 500*time.Millisecond {
			left = 500 * time.Millisecond
		}
		timer := time.NewTimer(left)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false, ctx.Err()
		case <-c.background.Done():
			timer.Stop()
			return false, clientError(codes.Canceled, pb.ErrorCode_CLIENT_CLOSED, nil, "the client was closed")
		case <-moved:
		case <-timer.C:
			// No news: ask, in case the watch is between leaders.
			if err := c.refreshView(ctx); IsRefused(err) {
				timer.Stop()
				return false, err
			}
		}
		timer.Stop()
	}
}
