package main

import (
	"io"
	"testing"
	"time"
)

func TestStoreWaitDefaultsToAMinuteAndFallsBackToTheEnvironment(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.storeWait != time.Minute {
		t.Fatalf("default: %v, %v", c.storeWait, err)
	}
	t.Setenv("TABULA_STORE_WAIT", "5s")
	if c, err = parseFlags(nil, io.Discard); err != nil || c.storeWait != 5*time.Second {
		t.Fatalf("from the environment: %v, %v", c.storeWait, err)
	}
	if c, err = parseFlags([]string{"--store-wait", "0"}, io.Discard); err != nil || c.storeWait != 0 {
		t.Fatalf("a flag must win over the environment: %v, %v", c.storeWait, err)
	}
	t.Setenv("TABULA_STORE_WAIT", "soon")
	if _, err := parseFlags(nil, io.Discard); err == nil {
		t.Fatal("an unparsable TABULA_STORE_WAIT was accepted")
	}
}
