package sllbr

import (
	"errors"
	"testing"
)

func TestSetDefaultImage(t *testing.T) {
	tmpl := template(t)
	if img := container(tmpl).Image; img != "" {
		t.Fatalf("deploy/sllbrd/deployment.yaml names the image %q: the SLLBR pods must run the controller's", img)
	}
	if err := SetDefaultImage(tmpl.DeepCopy(), ""); !errors.Is(err, ErrNoImage) {
		t.Errorf("no image anywhere: %v, want ErrNoImage", err)
	}
	withOwn := tmpl.DeepCopy()
	if err := SetDefaultImage(withOwn, "example.org/sllbrd:v1"); err != nil || container(withOwn).Image != "example.org/sllbrd:v1" {
		t.Errorf("the controller's image: %q, %v", container(withOwn).Image, err)
	}
	chosen := tmpl.DeepCopy()
	container(chosen).Image = "example.org/mine:v9"
	if err := SetDefaultImage(chosen, "example.org/sllbrd:v1"); err != nil || container(chosen).Image != "example.org/mine:v9" {
		t.Errorf("the template's own image was replaced: %q, %v", container(chosen).Image, err)
	}
	if err := SetDefaultImage(chosen, ""); err != nil {
		t.Errorf("a template that names its image needs none: %v", err)
	}
	v2 := tmpl.DeepCopy()
	if err := SetDefaultImage(v2, "example.org/sllbrd:v2"); err != nil {
		t.Fatal(err)
	}
	h1, h2 := Render(withOwn, gateway(), Parameters{}).Annotations[AnnotationHash], Render(v2, gateway(), Parameters{}).Annotations[AnnotationHash]
	if h1 == h2 {
		t.Errorf("a new controller image does not change the render hash: the SLLBR Deployments would not roll")
	}
}
