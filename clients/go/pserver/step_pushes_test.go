package pserver

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
)

// A SYNC step's kept pushes, sent again after the job's shard count changed: every block and row
// goes to the shard that holds it now, once, with the step's sample count.

var (
	keptIdentity = stepIdentity{trainerID: 4, step: 9, pass: 1}
	keptTable    = TableLayout{Name: "emb", Dim: 3, Buckets: 64}
)

func keptTables() *tableDirectory {
	tables := newTableDirectory()
	tables.declare(keptTable)
	return tables
}

// keptRows are the step's row gradients: 50 distinct ids, negative ones included.
func keptRows() stagedRows {
	rows := stagedRows{ids: make([]int64, 50), grads: make([]float32, 50*keptTable.Dim)}
	for k := range rows.ids {
		rows.ids[k] = int64(k)*7919 - 100
	}
	for k := range rows.grads {
		rows.grads[k] = float32(k) / 8
	}
	return rows
}

// pushesAt is the step's pushes as the client places them among shardCount shards.
func pushesAt(tables *tableDirectory, shardCount int, sampleCount uint64) map[int]sentPush {
	out := map[int]sentPush{}
	values := make([]float32, 2500)
	for k := range values {
		values[k] = float32(k)
	}
	content := Float32s(values).Data
	for _, b := range PlaceTensor("w", len(values), 256, shardCount) {
		push := out[b.Shard]
		push.dense = append(push.dense, &pb.Tensor{
			Name: b.Name, ElementType: pb.ElementType_ELEMENT_TYPE_FLOAT32, Content: content[4*b.Start : 4*b.End],
		})
		out[b.Shard] = push
	}
	merged := mergeRows(keptTable.Dim, []stagedRows{keptRows()})
	groups := groupByShard(merged.ids, keptTable, tables.shardsOf(keptTable, shardCount))
	for shard, grad := range sparseGradsByShard(keptTable.Name, merged, keptTable.Dim, groups) {
		push := out[shard]
		push.sparse = append(push.sparse, grad)
		out[shard] = push
	}
	// Every shard hears of the step; one with nothing of it gets a zero-sample push.
	none := uint64(0)
	for shard := 0; shard < shardCount; shard++ {
		push, ok := out[shard]
		push.sampleCount = &sampleCount
		if !ok {
			push.sampleCount = &none
		}
		out[shard] = push
	}
	return out
}

func keptAt(tables *tableDirectory, shardCount int) *stepPushes {
	pushes := newStepPushes(keptIdentity, shardCount)
	for shard, push := range pushesAt(tables, shardCount, 7) {
		pushes.record(shard, push)
	}
	return pushes
}

// blocksOf is a push's dense blocks, content by name.
func blocksOf(push sentPush) map[string][]byte {
	out := map[string][]byte{}
	for _, t := range push.dense {
		out[t.GetName()] = t.GetContent()
	}
	return out
}

// rowsOf is a push's row gradients, by id.
func rowsOf(push sentPush) map[int64][]float32 {
	out := map[int64][]float32{}
	for _, grad := range push.sparse {
		grads := floatsOf(grad.GetGrads())
		for k, id := range idsOf(grad.GetIds()) {
			out[id] = grads[k*keptTable.Dim : (k+1)*keptTable.Dim]
		}
	}
	return out
}

func TestKeptPushesUnderTheCountTheStepRanAtAreThePushesAsSent(t *testing.T) {
	tables := keptTables()
	pushes, want := keptAt(tables, 3), pushesAt(tables, 3, 7)
	for shard := 0; shard < 3; shard++ {
		got, ok := pushes.sentTo(shard, 4, 9, placement{shardCount: 3, tables: tables})
		if !ok {
			t.Fatalf("shard %d: nothing kept", shard)
		}
		if !reflect.DeepEqual(blocksOf(got), blocksOf(want[shard])) || !reflect.DeepEqual(rowsOf(got), rowsOf(want[shard])) {
			t.Errorf("shard %d: kept %v, want the push as sent %v", shard, got, want[shard])
		}
		if *got.sampleCount != *want[shard].sampleCount {
			t.Errorf("shard %d: sample count %d, want %d as sent", shard, *got.sampleCount, *want[shard].sampleCount)
		}
	}
}

func TestKeptPushesArePlacedAnewOnceTheShardCountMoved(t *testing.T) {
	for _, counts := range [][2]int{{3, 4}, {3, 2}, {2, 5}} {
		from, to := counts[0], counts[1]
		t.Run(fmt.Sprintf("%d to %d", from, to), func(t *testing.T) {
			tables := keptTables()
			pushes, want := keptAt(tables, from), pushesAt(tables, to, 7)
			everyRow := map[int64][]float32{}
			for shard := 0; shard < to; shard++ {
				got, ok := pushes.sentTo(shard, 4, 9, placement{shardCount: to, tables: tables})
				if !ok {
					t.Fatalf("shard %d: nothing kept", shard)
				}
				// What the step would have sent to the shard had it run at the new count.
				if !reflect.DeepEqual(blocksOf(got), blocksOf(want[shard])) {
					t.Errorf("shard %d: blocks %v, want %v", shard, blocksOf(got), blocksOf(want[shard]))
				}
				if !reflect.DeepEqual(rowsOf(got), rowsOf(want[shard])) {
					t.Errorf("shard %d: rows %v, want %v", shard, rowsOf(got), rowsOf(want[shard]))
				}
				wantCount := uint64(0)
				if len(got.dense)+len(got.sparse) > 0 {
					wantCount = 7
				}
				if got.sampleCount == nil || *got.sampleCount != wantCount {
					t.Errorf("shard %d: sample count %v, want %d", shard, got.sampleCount, wantCount)
				}
				for id, row := range rowsOf(got) {
					everyRow[id] = row
				}
			}
			if len(everyRow) != len(keptRows().ids) {
				t.Errorf("%d rows sent again in all, want every one of the step's %d", len(everyRow), len(keptRows().ids))
			}
		})
	}
}

func TestKeptPushesKeepTheAdmissionCountsWithTheirRows(t *testing.T) {
	tables := keptTables()
	pushes := newStepPushes(keptIdentity, 2)
	ids, counts := make([]byte, 16), make([]byte, 8)
	for k, id := range []int64{5, 6} {
		binary.LittleEndian.PutUint64(ids[8*k:], uint64(id))
		binary.LittleEndian.PutUint32(counts[4*k:], uint32(id-2))
	}
	grads := Float32s([]float32{1, 1, 1, 1, 1, 1}).Data
	one := uint64(1)
	pushes.record(0, sentPush{sparse: []*pb.SparseGrad{{Table: "emb", Ids: ids, Grads: grads, Counts: counts}}, sampleCount: &one})
	got := map[int64]uint32{}
	for shard := 0; shard < 3; shard++ {
		push, _ := pushes.sentTo(shard, 4, 9, placement{shardCount: 3, tables: tables})
		for _, grad := range push.sparse {
			admitted := countsOf(grad.GetCounts())
			for k, id := range idsOf(grad.GetIds()) {
				got[id] = admitted[k]
			}
		}
	}
	if want := map[int64]uint32{5: 3, 6: 4}; !reflect.DeepEqual(got, want) {
		t.Errorf("counts by id %v, want %v", got, want)
	}
}

func TestKeptPushesHaveNothingForAnotherTrainerOrStep(t *testing.T) {
	tables := keptTables()
	pushes := keptAt(tables, 3)
	if _, ok := pushes.sentTo(0, 5, 9, placement{shardCount: 4, tables: tables}); ok {
		t.Error("trainer 5 got trainer 4's pushes")
	}
	if _, ok := pushes.sentTo(0, 4, 8, placement{shardCount: 4, tables: tables}); ok {
		t.Error("step 8 got step 9's pushes")
	}
}
