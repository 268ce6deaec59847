package sllbr

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
)

// ErrNoImage is SetDefaultImage's error when the template's sllbrd
// container names no image and there is none to give it.
var ErrNoImage = errors.New("the template's sllbrd container names no image and the controller knows no image to give it")

// SetDefaultImage gives the template's sllbrd container image when the
// template names none: the SLLBR pods then run the controller's own image,
// so changing the controller's image (kustomize `images:`) changes theirs.
// A template that names an image keeps it: the user chose. tmpl is
// modified; it must have passed ParseTemplate.
func SetDefaultImage(tmpl *appsv1.Deployment, image string) error {
	c := container(tmpl)
	switch {
	case c == nil:
		return fmt.Errorf("no container named %q", ContainerName)
	case c.Image != "":
		return nil
	case image == "":
		return ErrNoImage
	}
	c.Image = image
	return nil
}
