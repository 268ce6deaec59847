package multinet

import (
	"encoding/json"
	"errors"
	"fmt"
)

// CNI error codes multinet returns: the spec's well-known ones, and its own
// from 100 on.
const (
	CodeIncompatibleVersion = 1
	CodeUnknownContainer    = 3
	CodeInvalidEnvironment  = 4
	CodeIOFailure           = 5
	CodeDecodingFailure     = 6
	CodeInvalidConfig       = 7
	// CodeDelegateFailed: a delegated plugin failed (the message names the
	// network and the plugin).
	CodeDelegateFailed = 100
	// CodeKubernetes: reading or writing the API failed, or the pod is not
	// the one the runtime named (UID).
	CodeKubernetes = 101
	// CodeInvalidAttachment: the pod's networks annotation or a
	// NetworkAttachmentDefinition is invalid.
	CodeInvalidAttachment = 102
	// CodeInternal is the spec's generic code, for errors without a code.
	CodeInternal = 999
)

// Error is a failure with its CNI error code.
type Error struct {
	Code uint
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// withCode gives err a CNI code, unless err is nil or already has one.
func withCode(code uint, err error) error {
	var ce *Error
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return &Error{Code: code, Err: err}
}

// codef is withCode of a new error.
func codef(code uint, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// ErrorJSON renders err as the CNI error object a plugin prints on stdout
// when it fails: its code (CodeInternal when it has none) and its message.
func ErrorJSON(err error) []byte {
	code := uint(CodeInternal)
	var ce *Error
	if errors.As(err, &ce) {
		code = ce.Code
	}
	out, _ := json.Marshal(struct { // cannot fail: strings and a number
		CNIVersion string `json:"cniVersion"`
		Code       uint   `json:"code"`
		Msg        string `json:"msg"`
	}{CNIVersion, code, err.Error()})
	return append(out, '\n')
}

// PluginError is the CNI error a delegated plugin returned.
type PluginError struct {
	Plugin  string
	Code    uint
	Msg     string
	Details string
}

func (e *PluginError) Error() string {
	s := fmt.Sprintf("plugin %s failed (code %d): %s", e.Plugin, e.Code, e.Msg)
	if e.Details != "" {
		s += ": " + e.Details
	}
	return s
}
