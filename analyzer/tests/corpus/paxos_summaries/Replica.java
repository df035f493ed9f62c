package summaries;

import java.util.Objects;
import java.util.UUID;

// Issue 23: the shapes of a Paxos replica whose guards live in library calls. Ballots are
// UUIDs compared through `timestamp()` and `equals` (summarised in the side file), a node
// object's fields are reported variables of their own (`parts`), a helper the side file
// summarises instead of inlining (`Ballots.newer`), and replies whose value, or whether
// there is one, a branch over node state chooses (control-dependent sends).

class Proposal {
    UUID ballot;
    String value;

    boolean isAfter(Proposal other) {
        return ballot.timestamp() > other.ballot.timestamp();
    }

    boolean hasBallot(UUID b) {
        return this.ballot.equals(b);
    }
}

class Request {
    Proposal payload;
    int from;
}

class Ballots {
    // Opaque to the analysis without its summary: a loop over a library list.
    static boolean newer(UUID a, UUID b) {
        for (Object o : Registry.all()) {
            if (o == a) {
                return false;
            }
        }
        return a.timestamp() > b.timestamp();
    }
}

class Replica {
    Proposal inProgress;
    Proposal committed;
    Store store;

    void prepare(Request r) {
        Proposal p = r.payload;
        if (p.isAfter(inProgress)) {
            store.savePromise(p);
            Network.reply(true, r.from);
        } else {
            Network.reply(false, r.from);
        }
    }

    void propose(Request r) {
        Proposal p = r.payload;
        boolean ok = p.hasBallot(inProgress.ballot) || p.isAfter(inProgress);
        if (ok) {
            inProgress = p;
            store.saveProposal(p);
        }
        Network.reply(ok, r.from);
    }

    void commit(Request r) {
        Proposal p = r.payload;
        if (Ballots.newer(p.ballot, committed.ballot)) {
            committed.ballot = p.ballot;
            committed.value = p.value;
            store.saveCommit(p);
        }
        // An acknowledgement only when nothing is in progress: whether a reply goes out
        // depends on the branch.
        if (inProgress == null) {
            Network.reply(true, r.from);
        }
    }

    // Null checks: a library's (a default summary) and the language's.
    void learn(Request r) {
        if (Objects.nonNull(committed.value) && inProgress.value == null) {
            Network.reply(true, r.from);
        }
    }
}
