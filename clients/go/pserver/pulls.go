package pserver

import (
	"context"
	"errors"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
)

// replyOverheadBytes bounds what a GetParams reply adds to a block's content (its name, type,
// shape and framing), generously.
const replyOverheadBytes = 1024

// pulledBlock is one block to read: where it goes in the reassembled tensor, and its bytes.
type pulledBlock struct {
	block, tensor string
	offset, bytes int
}

// GetParams reads whole tensors: their blocks are fetched from their shards in parallel and
// reassembled. One shard's blocks are asked for in as many calls as it takes for every reply to
// stay well below the message limit (half of Options.MaxMessageBytes), so a shard of any size
// can be read; a single block larger than the limit is CLIENT_MESSAGE_TOO_LARGE at once. A
// tensor the client does not know yet (it never initialized: an evaluator) is learned from the
// shards first (ListParams); one they do not hold either is CLIENT_UNKNOWN_TENSOR.
func (s *StepContext) GetParams(names ...string) (map[string]Tensor, error) {
	if err := s.learnUnknown(names); err != nil {
		return nil, err
	}
	out := map[string]Tensor{}
	byShard := map[int][]pulledBlock{}
	for _, name := range names {
		sp, err := s.client.spec(name)
		if err != nil {
			return nil, err
		}
		size := ElementSize(sp.elementType)
		out[name] = Tensor{Type: sp.elementType, Shape: sp.shape, Data: make([]byte, sp.length*size)}
		for _, b := range PlaceTensor(name, sp.length, s.view.BlockSize, s.view.ShardCount) {
			byShard[b.Shard] = append(byShard[b.Shard], pulledBlock{b.Name, name, b.Start * size, (b.End - b.Start) * size})
		}
	}
	limit := s.client.opts.MaxMessageBytes
	batches := map[int][][]pulledBlock{}
	for shard, blocks := range byShard {
		var err error
		if batches[shard], err = splitPull(blocks, limit); err != nil {
			return nil, err
		}
	}
	err := s.eachShard(shardsOf(byShard), func(shard int) error {
		// One shard's calls one after another: at most one reply per shard in memory at once.
		for _, batch := range batches[shard] {
			if err := s.pull(shard, batch, out); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// splitPull cuts one shard's blocks into the calls of a pull: in order, each call's reply at
// most half of limit, a block larger than that alone in its call. A block that cannot fit in a
// reply at all fails the pull before anything is sent.
func splitPull(blocks []pulledBlock, limit int) ([][]pulledBlock, error) {
	budget := limit / 2
	var batches [][]pulledBlock
	var batch []pulledBlock
	used := 0
	for _, b := range blocks {
		cost := b.bytes + len(b.block) + replyOverheadBytes
		if cost > limit {
			return nil, clientError(codes.ResourceExhausted, pb.ErrorCode_CLIENT_MESSAGE_TOO_LARGE, nil,
				"block %s: %d bytes, over the message limit of %d (Options.MaxMessageBytes): raise the limit "+
					"(and the server's --max-message-mb) or lower the block size", b.block, b.bytes, limit)
		}
		if len(batch) > 0 && used+cost > budget {
			batches = append(batches, batch)
			batch, used = nil, 0
		}
		batch = append(batch, b)
		used += cost
	}
	if len(batch) > 0 {
		batches = append(batches, batch)
	}
	return batches, nil
}

// pull reads one call's blocks into out. A server with a lower limit than this client's answers
// PSERVER_REPLY_TOO_LARGE: the call is split in two and each half asked for, down to one block.
func (s *StepContext) pull(shard int, batch []pulledBlock, out map[string]Tensor) error {
	names := make([]string, len(batch))
	for i, b := range batch {
		names[i] = b.block
	}
	err := s.withRetries(shard, func(ctx context.Context, address string, rc *pb.RequestContext) error {
		reply, err := s.client.calls.getParams(ctx, address, rc, names)
		if err != nil {
			return err
		}
		params := reply.GetParams()
		if len(params) != len(batch) {
			return clientError(codes.Internal, pb.ErrorCode_ERROR_CODE_UNSPECIFIED, nil,
				"GetParams of shard %d: %d tensors for %d names", shard, len(params), len(batch))
		}
		for i, param := range params {
			if param.GetName() != batch[i].block || len(param.GetContent()) != batch[i].bytes {
				return clientError(codes.Internal, pb.ErrorCode_ERROR_CODE_UNSPECIFIED, nil,
					"GetParams of shard %d: %s of %d bytes for %s of %d", shard, param.GetName(), len(param.GetContent()), batch[i].block, batch[i].bytes)
			}
			copy(out[batch[i].tensor].Data[batch[i].offset:], param.GetContent())
		}
		return nil
	})
	if errors.Is(err, ErrReplyTooLarge) {
		if len(batch) == 1 {
			return clientError(codes.ResourceExhausted, pb.ErrorCode_CLIENT_MESSAGE_TOO_LARGE, err,
				"block %s: %d bytes, over the pserver's message limit (its --max-message-mb): raise it or lower the block size", batch[0].block, batch[0].bytes)
		}
		half := len(batch) / 2
		if err := s.pull(shard, batch[:half], out); err != nil {
			return err
		}
		return s.pull(shard, batch[half:], out)
	}
	return err
}
