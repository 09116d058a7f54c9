//go:build integration

package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
)

// settings is the cluster every scenario starts.
type settings struct {
	Pservers  int `json:"pservers"`
	Spares    int `json:"spares"`
	Masters   int `json:"masters"`
	BlockSize int `json:"blockSize"`
}

type tensorSpec struct {
	Name        string   `json:"name"`
	ElementType string   `json:"elementType"`
	Length      int      `json:"length"`
	Shape       []uint64 `json:"shape"`
}

// rawTensor is a tensor as a raw call sends it.
type rawTensor struct {
	Name        string   `json:"name"`
	ElementType string   `json:"elementType"`
	Shape       []uint64 `json:"shape"`
	ContentHex  string   `json:"contentHex"`
}

type optimizerSpec struct {
	Sgd          *struct{} `json:"sgd"`
	Adam         *struct{} `json:"adam"`
	LearningRate *struct {
		Base float64 `json:"base"`
	} `json:"learningRate"`
}

// scenarios is proto/testdata/conformance/scenarios.json, the scenarios every client runs.
type scenarios struct {
	Cluster   settings `json:"cluster"`
	Placement struct {
		Vectors string `json:"vectors"`
	} `json:"placement"`
	RoundTrip struct {
		Tensors []struct {
			Name        string            `json:"name"`
			ElementType string            `json:"elementType"`
			Values      []json.RawMessage `json:"values"`
			ContentHex  string            `json:"contentHex"`
		} `json:"tensors"`
	} `json:"roundTrip"`
	InitElection struct {
		Trainers int        `json:"trainers"`
		Tensor   tensorSpec `json:"tensor"`
	} `json:"initElection"`
	StaleEpoch struct {
		Tensor    tensorSpec    `json:"tensor"`
		Optimizer optimizerSpec `json:"optimizer"`
		Gradient  []float32     `json:"gradient"`
		Expect    struct {
			RunsOfStep3  int       `json:"runsOfStep3"`
			PulledInRun1 []float32 `json:"pulledInRun1"`
			PulledInRun2 []float32 `json:"pulledInRun2"`
			Final        []float32 `json:"final"`
		} `json:"expect"`
	} `json:"staleEpoch"`
	DuplicatePush struct {
		Tensor    tensorSpec    `json:"tensor"`
		Optimizer optimizerSpec `json:"optimizer"`
		Gradient  []float32     `json:"gradient"`
		Expect    struct {
			Outcomes []string  `json:"outcomes"`
			Final    []float32 `json:"final"`
		} `json:"expect"`
	} `json:"duplicatePush"`
	Tasks struct {
		Dataset struct {
			Records struct {
				Records     uint64 `json:"records"`
				TaskRecords uint64 `json:"taskRecords"`
			} `json:"records"`
		} `json:"dataset"`
		Sequence []struct {
			GetTask *struct {
				Pass uint64 `json:"pass"`
			} `json:"getTask"`
			Outcome   string `json:"outcome"`
			Take      int    `json:"take"`
			Pass      uint64 `json:"pass"`
			FinishAll bool   `json:"finishAll"`
		} `json:"sequence"`
	} `json:"tasks"`
	BadInput struct {
		Setup struct {
			Tensor    tensorSpec    `json:"tensor"`
			Values    []float32     `json:"values"`
			Optimizer optimizerSpec `json:"optimizer"`
		} `json:"setup"`
		Cases []struct {
			Name      string          `json:"name"`
			RPC       string          `json:"rpc"`
			To        string          `json:"to"`
			Grad      *rawTensor      `json:"grad"`
			Param     *rawTensor      `json:"param"`
			Optimizer *optimizerSpec  `json:"optimizer"`
			Names     []string        `json:"names"`
			Request   json.RawMessage `json:"request"`
			// Code is a gRPC status name such as "INVALID_ARGUMENT" (codes.Code reads those).
			Code      codes.Code `json:"code"`
			ErrorCode string     `json:"errorCode"`
		} `json:"cases"`
	} `json:"badInput"`
	DefaultLearningRate struct {
		Tensor    tensorSpec    `json:"tensor"`
		Values    []float32     `json:"values"`
		Optimizer optimizerSpec `json:"optimizer"`
		Gradient  []float32     `json:"gradient"`
		Expect    struct {
			After              float64 `json:"after"`
			Tolerance          float64 `json:"tolerance"`
			ListedLearningRate float64 `json:"listedLearningRate"`
		} `json:"expect"`
	} `json:"defaultLearningRate"`
	Attach struct {
		Tensors []struct {
			Name        string    `json:"name"`
			ElementType string    `json:"elementType"`
			Shape       []uint64  `json:"shape"`
			Values      []float64 `json:"values"`
		} `json:"tensors"`
		Optimizer optimizerSpec `json:"optimizer"`
		Expect    struct {
			Listed map[string]struct {
				ElementType  string   `json:"elementType"`
				Shape        []uint64 `json:"shape"`
				LearningRate float64  `json:"learningRate"`
			} `json:"listed"`
		} `json:"expect"`
	} `json:"attach"`
	Tables struct {
		// Tables are TableSpecs in proto3 JSON (protojson reads them).
		Tables    []json.RawMessage `json:"tables"`
		Probe     []string          `json:"probe"`
		Push      rowPush           `json:"push"`
		GatedPush rowPush           `json:"gatedPush"`
		Expect    struct {
			InitHex    string      `json:"initHex"`
			AfterHex   string      `json:"afterHex"`
			GatedAfter [][]float32 `json:"gatedAfter"`
		} `json:"expect"`
		BadPushes []struct {
			Name   string `json:"name"`
			Sparse struct {
				Table    string `json:"table"`
				IdsHex   string `json:"idsHex"`
				GradsHex string `json:"gradsHex"`
			} `json:"sparse"`
			Code      codes.Code `json:"code"`
			ErrorCode string     `json:"errorCode"`
		} `json:"badPushes"`
	} `json:"tables"`
	FinishJob struct {
		Trainers      []string `json:"trainers"`
		Quorum        uint32   `json:"quorum"`
		LeaveWithinMs int      `json:"leaveWithinMs"`
	} `json:"finishJob"`
}

// rowPush is row gradients of one table: ids as decimal strings (int64 beyond 2^53), a row each.
type rowPush struct {
	Table string      `json:"table"`
	IDs   []string    `json:"ids"`
	Grads [][]float32 `json:"grads"`
}

// scenarioTests is the test that runs each scenario of scenarios.json, by the scenario's name.
// TestEveryScenarioIsRun holds it to the file both ways: a scenario the file lists and no test
// runs fails, and so does a test of a scenario the file does not list.
var scenarioTests = map[string]func(*testing.T){
	"placement":           TestPlacement,
	"roundTrip":           TestRoundTrip,
	"initElection":        TestInitElection,
	"staleEpoch":          TestStaleEpoch,
	"duplicatePush":       TestDuplicatePush,
	"tasks":               TestTasks,
	"badInput":            TestBadInput,
	"defaultLearningRate": TestDefaultLearningRate,
	"attach":              TestAttach,
	"tables":              TestTables,
	"finishJob":           TestFinishJob,
}

func TestEveryScenarioIsRun(t *testing.T) {
	raw, err := os.ReadFile(filepath.FromSlash(scenariosFile))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := scenarioNames(raw)
	if err != nil {
		t.Fatalf("%s: %v", scenariosFile, err)
	}
	run := make([]string, 0, len(scenarioTests))
	for name := range scenarioTests {
		run = append(run, name)
	}
	if err := checkCoverage(listed, run); err != nil {
		t.Fatal(err)
	}
}

func loadScenarios(t *testing.T) scenarios {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "proto/testdata/conformance/scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s scenarios
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("scenarios.json: %v", err)
	}
	return s
}
