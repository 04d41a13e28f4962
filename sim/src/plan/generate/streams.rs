//! Every RNG stream a seed feeds, with its salt: stream `s` of seed `seed` is a ChaCha8 RNG
//! seeded with `seed ^ salt(s)`.
//!
//! Each pass added after the first draws from a stream of its own, so adding one leaves every
//! other draw of every seed as it was: a new pass gets a new stream (and a new salt) here. The
//! salts are the enum's discriminants, so the compiler refuses two equal ones, and the
//! `streams!` list below declares each stream and [`Stream::ALL`] at once, so none is left out
//! of it.

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Declares [`Stream`] (each variant's discriminant is its salt) and [`Stream::ALL`] from one
/// list.
macro_rules! streams {
    ($($(#[$doc:meta])* $name:ident = $salt:literal,)+) => {
        /// An RNG stream of a seed; its discriminant is its salt. The salts of the streams added
        /// later spell their name in ASCII.
        #[derive(Copy, Clone, PartialEq, Eq, Debug)]
        #[repr(u64)]
        pub enum Stream {
            $($(#[$doc])* $name = $salt,)+
        }

        impl Stream {
            /// Every stream, in the order of the list (the salts-differ test reads it).
            #[cfg(test)]
            pub const ALL: &'static [Stream] = &[$(Stream::$name,)+];
        }
    };
}

streams! {
    /// The seed itself (salt 0), the plan's first stream: the swarm (workers, task count, owners,
    /// which fault families and hostile contents are on), then the tasks with their scripts,
    /// contents and quirks, the users' cancels, thread deletions and listings, and last the
    /// switched-on families' faults — in that order. (turmoil's own RNG, in `world.rs`, is
    /// seeded with the seed too, through a generator of its own.)
    Swarm = 0,
    /// One worker clock off by more than the lease margin ("bigskew").
    BigSkew = 0x0062_6967_736b_6577,
    /// The operator's requeues of dead letters ("requeue").
    Requeues = 0x0072_6571_7565_7565,
    /// The users' answers to the scripts' questions ("answers").
    Answers = 0x0061_6e73_7765_7273,
    /// The asking steps that ask several questions at once, and the order their owners answer
    /// them in ("questns").
    Questions = 0x0071_7565_7374_6e73,
    /// How each task's server answers a cancel, and the cancels that meet a legacy server's
    /// "already terminal" ("cancels").
    CancelStyles = 0x0063_616e_6365_6c73,
    /// A worker's poll held on the wire while its task's acknowledged cancel ends ("heldpoll").
    HeldPoll = 0x6865_6c64_706f_6c6c,
    /// Lanes stalled just after the remote server took a user's answer ("anspause").
    AnswerPauses = 0x616e_7370_6175_7365,
    /// Graceful restarts of a worker and of the remote server ("restart").
    Restarts = 0x0072_6573_7461_7274,
    /// One long task whose remote shard goes down, once or twice ("outages").
    TaskOutages = 0x006f_7574_6167_6573,
    /// Whether the second of two such outages lasts up to the heal ("degrade").
    LongSecondOutage = 0x0064_6567_7261_6465,
    /// A doomed notification version and the owner's cancel that meets it ("doomed").
    DoomedVersion = 0x0000_646f_6f6d_6564,
    /// The users' hostile task names ("names").
    HostileNames = 0x006e_616d_6573,
    /// Tasks the remote server cancels on its own, and their owners' late cancels ("selfcncl").
    SelfCancels = 0x7365_6c66_636e_636c,
    /// A database outage just after a submit stored its intent ("storedwn").
    StoreOutages = 0x7374_6f72_6564_776e,
    /// A window of runs that ignore interrupts ("stubborn").
    StubbornRuns = 0x7374_7562_626f_726e,
    /// A window of lost create replies whose runs the next listing misses ("lostacks").
    LostCreateAcks = 0x6c6f_7374_6163_6b73,
    /// A worker clock stepped back as one of its polls brings news ("stepnews").
    StepAtNews = 0x7374_6570_6e65_7773,
    /// Every worker losing the Agent Server or the MCP server up to a later heal ("peerdown").
    PeerOutages = 0x7065_6572_646f_776e,
    /// Disguised injections in the servers' scripted texts ("disguise").
    Disguise = 0x6469_7367_7569_7365,
    /// The shapes of the secret echoes in the servers' scripted texts ("echoes").
    Echoes = 0x6563_686f_6573,
    /// The users' cancels asked again once the cancel work has mostly ended ("laterpts").
    LateRepeats = 0x6c61_7465_7270_7473,
    /// Whether retention runs ("retentio").
    Retention = 0x7265_7465_6e74_696f,
    /// Whether a single long shard outage keeps the rest of the chaos quiet ("quietout").
    QuietOutage = 0x7175_6965_746f_7574,
    /// Two workers' clocks skewed in opposite directions at once ("skewpair").
    OpposedSkews = 0x736b_6577_7061_6972,
    /// A task's three close status changes while its own slow run holds the thread
    /// ("busynews").
    BusyNews = 0x6275_7379_6e65_7773,
    /// A dead letter made fresh under retention and requeued after the ordinary retention age
    /// ("freshdl").
    FreshDeadLetter = 0x0066_7265_7368_646c,
    /// A cancel acknowledged while the task keeps working, asked again after the cancel work
    /// ended ("ackrept").
    AckedRepeat = 0x0061_636b_7265_7074,
    /// A question answered and followed by news while every launch is held on the wire
    /// ("heldnews").
    HeldNews = 0x6865_6c64_6e65_7773,
    /// Not a plan stream: the `mcp` host's draws as the world runs, the random tags in the
    /// secrets of each remote task it creates ("mcps").
    McpHost = 0x6d63_7073,
    /// Not a plan stream: the `gateway` host's draws as the world runs, how long a run takes
    /// when no fault decides it ("gate").
    GatewayHost = 0x6761_7465,
}

impl Stream {
    /// The salt mixed into the seed.
    pub fn salt(self) -> u64 {
        self as u64
    }

    /// This stream of `seed`: a ChaCha8 RNG seeded with `seed ^ salt`. Two calls give the same
    /// draws.
    pub fn rng(self, seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed ^ self.salt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn every_stream_has_a_salt_of_its_own() {
        let mut salts: Vec<u64> = Stream::ALL.iter().map(|s| s.salt()).collect();
        salts.sort_unstable();
        salts.dedup();
        assert_eq!(salts.len(), Stream::ALL.len());
        assert_eq!(
            Stream::Swarm.salt(),
            0,
            "the first stream is the seed itself"
        );
    }

    #[test]
    fn a_stream_is_the_seed_xor_its_salt() {
        let draw = |mut rng: ChaCha8Rng| rng.random::<u64>();
        let seed = 42;
        assert_eq!(
            draw(Stream::Answers.rng(seed)),
            draw(ChaCha8Rng::seed_from_u64(seed ^ 0x0061_6e73_7765_7273))
        );
        assert_eq!(
            draw(Stream::Swarm.rng(seed)),
            draw(ChaCha8Rng::seed_from_u64(seed))
        );
        assert_ne!(
            draw(Stream::Answers.rng(seed)),
            draw(Stream::Questions.rng(seed))
        );
    }
}
