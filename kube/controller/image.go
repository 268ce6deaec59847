package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
)

// WithImage sets the image of the SLLBR pods whose template names none
// (sllbr.SetDefaultImage). It replaces WithImageFromPod.
func WithImage(image string) Option {
	return func(c *Controller) { c.image, c.imagePod = image, nil }
}

// WithImageFromPod takes that image from the container named container of
// the pod namespace/name: the controller's own pod and container, so the
// SLLBR pods run the controller's release and a rollout of the controller
// to a new image rolls every SLLBR Deployment whose template names none.
// The pod is read once, when Run starts; Run fails when it cannot be read.
// It replaces WithImage.
func WithImageFromPod(namespace, name, container string) Option {
	return func(c *Controller) { c.image, c.imagePod = "", &podRef{namespace, name, container} }
}

// podRef names a container of a pod.
type podRef struct{ namespace, name, container string }

func (p *podRef) check() error {
	if p == nil {
		return nil
	}
	if p.namespace == "" || p.name == "" || p.container == "" {
		return fmt.Errorf("controller: the pod to take the SLLBR image from needs a namespace (%q), a name (%q) and a container (%q)",
			p.namespace, p.name, p.container)
	}
	return nil
}

// readImage reads the image of WithImageFromPod's container.
func (c *Controller) readImage(ctx context.Context) error {
	p := c.imagePod
	if p == nil {
		return nil
	}
	pod, err := c.kube.CoreV1().Pods(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("controller: read its own pod %s/%s for the SLLBR pods' image: %w", p.namespace, p.name, err)
	}
	var names []string
	for _, ct := range pod.Spec.Containers {
		if ct.Name == p.container && ct.Image != "" {
			c.image = ct.Image
			c.log.Info("SLLBR pods whose template names no image get the controller's", "image", c.image,
				"pod", p.namespace+"/"+p.name, "container", p.container)
			return nil
		}
		names = append(names, ct.Name)
	}
	return fmt.Errorf("controller: its own pod %s/%s has no container %q with an image (containers: %s)",
		p.namespace, p.name, p.container, strings.Join(names, ", "))
}

// checkImage fails when the template needs an image and the controller has
// none to give: better a clear error at start than Deployments the API
// server refuses. (A template edited later to need one is an
// InvalidTemplate problem of each Gateway.)
func (c *Controller) checkImage() error {
	if _, err := c.template(); errors.Is(err, sllbr.ErrNoImage) {
		return fmt.Errorf("controller: SLLBR Deployment template: %w", err)
	}
	return nil
}
