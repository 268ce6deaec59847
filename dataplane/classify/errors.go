package classify

import "strconv"

// RouteError says why Compile skipped a route. Field uses the L34Route
// spelling with an index where the field is a list ("destinationCIDRs[1]");
// Value is the offending value as text ("" when the field is missing).
type RouteError struct {
	Route  string // the route's name (namespace/name)
	Field  string
	Value  string
	Reason string
}

// Error formats the error as `l34route "ns/r1": field "value": reason`.
func (e *RouteError) Error() string {
	s := "l34route " + strconv.Quote(e.Route) + ": " + e.Field
	if e.Value != "" {
		s += " " + strconv.Quote(e.Value)
	}
	return s + ": " + e.Reason
}

func routeErr(route, field, value, reason string) *RouteError {
	return &RouteError{Route: route, Field: field, Value: value, Reason: reason}
}

func indexed(field string, i int) string {
	return field + "[" + strconv.Itoa(i) + "]"
}
