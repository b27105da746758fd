//! One endpoint's circuit, kept by each instance for each lane: after
//! [`WebhookSettings::circuit_failures`] failed attempts in a row the endpoint's lane stops
//! sending (open) for [`WebhookSettings::circuit_open`], then lets one attempt through (a
//! probe, half-open): its success closes the circuit, its failure opens it again for twice
//! as long, up to [`WebhookSettings::max_retry_delay`]. While it is open no event of the
//! endpoint is claimed, so none spends an attempt on an endpoint known to be down.
//!
//! Pure state over a clock the caller passes, so its rules are unit-tested without
//! sleeping.

use std::time::{Duration, Instant};

use crate::config::webhooks::WebhookSettings;

/// May a lane's worker claim an event now?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permit {
    /// Closed: send.
    Send,
    /// Half-open: send one attempt, the probe; report its end with `probe: true`.
    Probe,
    /// Open, or a probe is under way: claim nothing now.
    Wait,
}

/// What an attempt's end changed, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The circuit opened (or opened again after a failed probe) for this long.
    Opened(Duration),
    /// It closed: the endpoint answered again.
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant, open_for: Duration },
    HalfOpen { open_for: Duration, probing: bool },
}

/// The circuit of one endpoint's lane on this instance.
#[derive(Debug, Clone)]
pub struct Circuit {
    /// Failures in a row that open it; 0: never opens.
    failures_to_open: u32,
    first_open: Duration,
    longest_open: Duration,
    state: State,
}

impl Circuit {
    /// A closed circuit with the settings' thresholds.
    pub fn new(settings: &WebhookSettings) -> Self {
        Self {
            failures_to_open: settings.circuit_failures,
            first_open: settings.circuit_open,
            longest_open: settings.max_retry_delay.max(settings.circuit_open),
            state: State::Closed { failures: 0 },
        }
    }

    /// Whether a worker may claim an event at `now`. A `Probe` is handed to one worker
    /// at a time; it must end with [`Circuit::succeeded`], [`Circuit::failed`] or
    /// [`Circuit::probe_unused`].
    pub fn permit(&mut self, now: Instant) -> Permit {
        match self.state {
            State::Closed { .. } => Permit::Send,
            State::Open { until, open_for } if now >= until => {
                self.state = State::HalfOpen {
                    open_for,
                    probing: true,
                };
                Permit::Probe
            }
            State::HalfOpen {
                open_for,
                probing: false,
            } => {
                self.state = State::HalfOpen {
                    open_for,
                    probing: true,
                };
                Permit::Probe
            }
            State::Open { .. } | State::HalfOpen { .. } => Permit::Wait,
        }
    }

    /// The probe sent nothing (no event was due, the lease moved on, the server is
    /// stopping): the next worker may probe.
    pub fn probe_unused(&mut self) {
        if let State::HalfOpen { open_for, .. } = self.state {
            self.state = State::HalfOpen {
                open_for,
                probing: false,
            };
        }
    }

    /// An attempt was answered 2xx: the endpoint is up, whatever the state was.
    pub fn succeeded(&mut self) -> Option<Change> {
        let was_closed = matches!(self.state, State::Closed { .. });
        self.state = State::Closed { failures: 0 };
        (!was_closed).then_some(Change::Closed)
    }

    /// An attempt failed at `now` (`probe`: it was the half-open probe). Failures of
    /// attempts that began before the circuit opened change nothing once it is open.
    pub fn failed(&mut self, now: Instant, probe: bool) -> Option<Change> {
        match self.state {
            State::Closed { failures } => {
                let failures = failures.saturating_add(1);
                if self.failures_to_open > 0 && failures >= self.failures_to_open {
                    self.open(now, self.first_open)
                } else {
                    self.state = State::Closed { failures };
                    None
                }
            }
            State::HalfOpen { open_for, .. } if probe => {
                let longer = open_for.saturating_mul(2).min(self.longest_open);
                self.open(now, longer)
            }
            State::Open { .. } | State::HalfOpen { .. } => None,
        }
    }

    fn open(&mut self, now: Instant, open_for: Duration) -> Option<Change> {
        self.state = State::Open {
            until: now + open_for,
            open_for,
        };
        Some(Change::Opened(open_for))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn circuit() -> Circuit {
        Circuit::new(&WebhookSettings {
            circuit_failures: 3,
            circuit_open: Duration::from_secs(1),
            max_retry_delay: Duration::from_secs(3),
            ..WebhookSettings::default()
        })
    }

    #[test]
    fn opens_after_failures_in_a_row_and_a_success_resets_the_count() {
        let mut c = circuit();
        let t = Instant::now();
        assert_eq!(c.failed(t, false), None);
        assert_eq!(c.failed(t, false), None);
        assert_eq!(c.succeeded(), None);
        assert_eq!(c.failed(t, false), None);
        assert_eq!(c.failed(t, false), None);
        assert_eq!(c.permit(t), Permit::Send);
        assert_eq!(
            c.failed(t, false),
            Some(Change::Opened(Duration::from_secs(1)))
        );
        assert_eq!(c.permit(t), Permit::Wait);
        // An attempt already in flight when it opened fails: still open, not longer.
        assert_eq!(c.failed(t, false), None);
        assert_eq!(c.permit(t + Duration::from_millis(999)), Permit::Wait);
    }

    #[test]
    fn one_probe_at_a_time_and_failed_probes_wait_longer_up_to_the_cap() {
        let mut c = circuit();
        let mut t = Instant::now();
        for _ in 0..3 {
            c.failed(t, false);
        }
        let mut waits = Vec::new();
        for _ in 0..4 {
            t += Duration::from_secs(10);
            assert_eq!(c.permit(t), Permit::Probe);
            assert_eq!(c.permit(t), Permit::Wait, "a second probe at once");
            // A late failure of an attempt that is not the probe changes nothing.
            assert_eq!(c.failed(t, false), None);
            match c.failed(t, true) {
                Some(Change::Opened(d)) => waits.push(d.as_secs()),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(waits, vec![2, 3, 3, 3]);
        t += Duration::from_secs(10);
        assert_eq!(c.permit(t), Permit::Probe);
        c.probe_unused();
        assert_eq!(c.permit(t), Permit::Probe, "an unused probe is handed on");
        assert_eq!(c.succeeded(), Some(Change::Closed));
        assert_eq!(c.permit(t), Permit::Send);
    }

    #[test]
    fn zero_failures_never_opens() {
        let mut c = Circuit::new(&WebhookSettings {
            circuit_failures: 0,
            ..WebhookSettings::default()
        });
        let t = Instant::now();
        for _ in 0..100 {
            assert_eq!(c.failed(t, false), None);
        }
        assert_eq!(c.permit(t), Permit::Send);
    }
}
