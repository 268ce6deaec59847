package metrics

import "github.com/sllbrd/sllbrd/bfd"

// BFDStateLabel returns the state label value of sllbrd_bfd_session_state
// for s ("admin_down", "down", "init", "up"), so that other views of the
// sessions (sllbrd show sessions) use the metrics' words.
func BFDStateLabel(s bfd.State) string {
	for _, st := range bfdStates {
		if st.state == s {
			return st.label
		}
	}
	return snake(s.String())
}

// BFDDiagnosticLabel returns the diagnostic label value of
// sllbrd_bfd_session_diagnostic_info for d (e.g.
// "control_detection_time_expired").
func BFDDiagnosticLabel(d bfd.Diag) string { return snake(d.String()) }
