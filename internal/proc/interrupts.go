package proc

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// Interrupts is how idemtest ends on SIGINT, SIGTERM and SIGHUP: the first one cancels the run
// (its services are stopped, its reports written for what finished); a second kills every child
// at once, and should anything still hold the run a second later, the process exits.
type Interrupts struct {
	sigs          chan os.Signal
	first         atomic.Value // the first signal received
	done, handled chan struct{}
}

// HandleInterrupts handles the signals until Stop: cancel is called on the first, said on the
// first and on the second (again), and exit when the run has not unwound a second after the
// second.
func HandleInterrupts(cancel func(), said func(sig os.Signal, again bool), exit func(sig os.Signal)) *Interrupts {
	in := &Interrupts{sigs: make(chan os.Signal, 2), done: make(chan struct{}), handled: make(chan struct{})}
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		defer close(in.handled)
		var sig os.Signal
		select {
		case sig = <-in.sigs:
		case <-in.done:
			return
		}
		in.first.Store(sig)
		said(sig, false)
		cancel()
		select {
		case <-in.sigs:
		case <-in.done:
			return
		}
		said(sig, true)
		KillChildren()
		// The run unwinds at once now that its processes are gone; should anything still hold
		// it, exit anyway.
		select {
		case <-in.done:
		case <-time.After(time.Second):
			exit(sig)
		}
	}()
	return in
}

// Stop ends the handling and returns the first signal received, nil when there was none.
func (in *Interrupts) Stop() os.Signal {
	close(in.done)
	<-in.handled
	signal.Stop(in.sigs)
	sig, _ := in.first.Load().(os.Signal)
	return sig
}
