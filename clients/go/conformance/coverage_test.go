package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// scenariosFile is the file of the scenarios every client runs, from this package's directory.
const scenariosFile = "../../../proto/testdata/conformance/scenarios.json"

// notScenarios are the keys of a scenarios file that are not scenarios.
var notScenarios = map[string]bool{"$comment": true, "cluster": true}

// scenarioNames is the scenarios a scenarios file lists: its keys but "$comment" and "cluster",
// sorted.
func scenarioNames(file []byte) ([]string, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(file, &keys); err != nil {
		return nil, err
	}
	var names []string
	for key := range keys {
		if !notScenarios[key] {
			names = append(names, key)
		}
	}
	sort.Strings(names)
	return names, nil
}

// checkCoverage compares the scenarios a file lists with those a suite runs, both ways: an
// error names the listed ones the suite does not run and the ones it runs that the file does
// not list. So a scenario added to the file fails every client that does not run it yet, and
// one renamed or removed there fails every client still running it.
func checkCoverage(listed, run []string) error {
	in := func(names []string) map[string]bool {
		set := map[string]bool{}
		for _, n := range names {
			set[n] = true
		}
		return set
	}
	listedSet, runSet := in(listed), in(run)
	var notRun, unlisted []string
	for _, n := range listed {
		if !runSet[n] {
			notRun = append(notRun, n)
		}
	}
	for n := range runSet {
		if !listedSet[n] {
			unlisted = append(unlisted, n)
		}
	}
	sort.Strings(notRun)
	sort.Strings(unlisted)
	var problems []string
	if len(notRun) > 0 {
		problems = append(problems, "scenarios.json lists scenarios no test runs: "+strings.Join(notRun, ", "))
	}
	if len(unlisted) > 0 {
		problems = append(problems, "tests run scenarios scenarios.json does not list: "+strings.Join(unlisted, ", "))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func TestCheckCoverageNamesScenariosNotRunAndRunUnlisted(t *testing.T) {
	fake := []byte(`{"$comment": "fake", "cluster": {"pservers": 2}, "placement": {}, "tables": {}, "tasks": {}}`)
	listed, err := scenarioNames(fake)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"placement", "tables", "tasks"}; !reflect.DeepEqual(listed, want) {
		t.Fatalf("scenarioNames = %v, want %v", listed, want)
	}
	err = checkCoverage(listed, []string{"tasks", "placement", "renamed"})
	want := "scenarios.json lists scenarios no test runs: tables; tests run scenarios scenarios.json does not list: renamed"
	if err == nil || err.Error() != want {
		t.Fatalf("checkCoverage = %v, want %q", err, want)
	}
	if err := checkCoverage(listed, []string{"tables", "tasks", "placement"}); err != nil {
		t.Fatalf("checkCoverage of every listed scenario = %v, want nil", err)
	}
}

func TestScenarioNamesReadsTheRealFile(t *testing.T) {
	raw, err := os.ReadFile(filepath.FromSlash(scenariosFile))
	if err != nil {
		t.Fatal(err)
	}
	names, err := scenarioNames(raw)
	if err != nil {
		t.Fatalf("%s: %v", scenariosFile, err)
	}
	if i := sort.SearchStrings(names, "placement"); i == len(names) || names[i] != "placement" {
		t.Fatalf("%s: scenarios %v, want placement among them", scenariosFile, names)
	}
}
