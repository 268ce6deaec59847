package admin

import (
	"encoding/json"
	"fmt"
	"slices"
)

// MaxRequestBytes bounds a request; the server refuses longer ones.
const MaxRequestBytes = 8 << 10

// MaxResponseBytes bounds a response; the client refuses longer ones.
const MaxResponseBytes = 64 << 20

// The commands of a Request.
const (
	CommandShow     = "show"
	CommandExplain  = "explain"
	CommandLogLevel = "log-level"
)

// The topics of `show`.
const (
	TopicRoutes    = "routes"
	TopicServices  = "services"
	TopicEndpoints = "endpoints"
	TopicSessions  = "sessions"
	TopicFragments = "fragments"
	TopicConfig    = "config"
)

// Topics lists what `show` shows.
var Topics = []string{TopicRoutes, TopicServices, TopicEndpoints, TopicSessions, TopicFragments, TopicConfig}

// Request is what a client sends: one JSON object per connection.
type Request struct {
	Command string `json:"command"`
	Topic   string `json:"topic,omitempty"` // show
	Flow    *Flow  `json:"flow,omitempty"`  // explain
	Level   string `json:"level,omitempty"` // log-level: the level to set; empty only reads it
}

// Response is what the server answers: Result on success (the JSON of the
// command's result type), Error otherwise.
type Response struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Validate checks a request at the boundary.
func (r *Request) Validate() error {
	switch r.Command {
	case CommandShow:
		if !slices.Contains(Topics, r.Topic) {
			return fmt.Errorf("show %q: want one of %v", r.Topic, Topics)
		}
	case CommandExplain:
		if r.Flow == nil {
			return fmt.Errorf("explain: no flow")
		}
		return r.Flow.Validate()
	case CommandLogLevel:
		if r.Level != "" {
			if _, err := ParseLevel(r.Level); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown command %q: want show, explain or log-level", r.Command)
	}
	return nil
}
