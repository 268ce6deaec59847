package onnode

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/node"
)

// summary is the part of the kubelet's summary API (/stats/summary) the
// footprint reads.
type summary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		Containers []struct {
			Name string `json:"name"`
			CPU  struct {
				UsageNanoCores *uint64 `json:"usageNanoCores"`
			} `json:"cpu"`
			Memory struct {
				WorkingSetBytes *uint64 `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"containers"`
	} `json:"pods"`
}

// footprintRow is one container at rest.
type footprintRow struct {
	pod, container string
	workingSet     uint64
	milliCores     float64
}

// phaseFootprint reads every container's working set and CPU at rest from
// the kubelet's summary API, through the API server as a user would
// (kubectl get --raw), after the traffic has stopped for rest.
func (e *env) phaseFootprint() {
	const rest = 20 * time.Second
	time.Sleep(rest)
	var rows []footprintRow
	e.waitFor(time.Minute, "the summary API has every container's working set", func() (bool, string) {
		var why string
		rows, why = e.summaryRows()
		// 2 controllers, 2 SLLBRs, 3 applications with their sidecars.
		return why == "" && len(rows) == 2+2+2*3, fmt.Sprintf("%d containers %s", len(rows), why)
	})
	slices.SortFunc(rows, func(a, b footprintRow) int { return strings.Compare(a.container+a.pod, b.container+b.pod) })
	var b strings.Builder
	fmt.Fprintf(&b, "%-52s %-14s %12s %10s\n", "pod", "container", "working set", "CPU")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-52s %-14s %8.1f MiB %6.1f m\n", r.pod, r.container, float64(r.workingSet)/(1<<20), r.milliCores)
	}
	e.t.Logf("footprint at rest (kubelet summary API, %v after the traffic):\n%s", rest, b.String())
	e.records = append(e.records, "footprint at rest (working set, CPU):\n"+b.String())
	for _, r := range rows {
		if r.workingSet == 0 {
			e.t.Errorf("%s/%s: a working set of 0", r.pod, r.container)
		}
	}
}

// summaryRows reads the working set and CPU of every container of the
// namespace from the kubelet's summary API, through the API server as a
// user would (kubectl get --raw); why says what is missing.
func (e *env) summaryRows() (rows []footprintRow, why string) {
	var s summary
	raw := e.k("get", "--raw", "/api/v1/nodes/"+node.Name+"/proxy/stats/summary")
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, err.Error()
	}
	for _, p := range s.Pods {
		if p.PodRef.Namespace != ns {
			continue
		}
		for _, c := range p.Containers {
			if c.Memory.WorkingSetBytes == nil || c.CPU.UsageNanoCores == nil {
				return nil, p.PodRef.Name + "/" + c.Name + " has no figures yet"
			}
			rows = append(rows, footprintRow{p.PodRef.Name, c.Name, *c.Memory.WorkingSetBytes, float64(*c.CPU.UsageNanoCores) / 1e6})
		}
	}
	return rows, ""
}
