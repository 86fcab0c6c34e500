//! The optimistic-concurrency register (`kind = "occ"`): read the version, write iff unchanged.
//! Models the AWS Architecture Blog's 2015 "Exponential Backoff and Jitter" experiment.

use super::{Event, Phase, Reply, Simulation};
use crate::engine::Handle;

impl Simulation<'_> {
    /// OCC read: the register answers with its current version (no queue, no service time).
    pub(super) fn occ_read(&mut self, handle: Handle, hop: usize) {
        let version = self.hops[self.lbs[hop].base as usize].version;
        let a = self.attempts.get_mut(handle).expect("live");
        a.occ_version = version;
        a.phase = Phase::Service;
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        self.queue.push(self.now.saturating_add(net), Event::OccReadBack { attempt: handle });
    }

    /// OCC: the client got the version and sends its conditional write.
    pub(super) fn occ_send_write(&mut self, handle: Handle) {
        let hop = self.attempts.get(handle).expect("live").hop as usize;
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        self.queue.push(self.now.saturating_add(net), Event::OccWrite { attempt: handle });
    }

    /// OCC write: succeeds iff the version read is still current, which then increments.
    pub(super) fn occ_write(&mut self, handle: Handle) {
        let a = self.attempts.get(handle).expect("live");
        let state = &mut self.hops[a.server as usize];
        let won = a.occ_version == state.version;
        if won {
            state.version += 1;
        }
        self.send_reply(handle, if won { Reply::Ok } else { Reply::Failed });
    }
}
