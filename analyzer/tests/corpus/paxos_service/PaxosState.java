package paxos;

import java.util.UUID;

// Cassandra 2.0's service/paxos, cut down to the shapes a first side file met: replies sent
// through the `MessagingService.instance()` singleton, a library call that is both modelled
// ([[call]]) and a disk write ([[disk]]), node state read through `UUID.timestamp()`, a field
// holding a second reported variable (`also`), and a conditional expression.

class Commit {
    UUID ballot;
    String update;
}

class MessageIn {
    Commit payload;
    int from;
}

class PrepareResponse {
    boolean promised;
    Commit inProgress;

    PrepareResponse(boolean promised, Commit inProgress) {
        this.promised = promised;
        this.inProgress = inProgress;
    }
}

class PaxosState {
    Commit promised;
    Commit accepted;
    UUID lastBallot;
    SystemKeyspace keyspace;

    void prepare(MessageIn message, int id) {
        Commit toPrepare = message.payload;
        boolean ok = toPrepare.ballot.timestamp() > lastBallot.timestamp() && lastBallot.variant() == 2;
        PrepareResponse response = ok
                ? new PrepareResponse(true, accepted)
                : new PrepareResponse(false, null);
        MessagingService.instance().sendReply(response, id, message.from);
    }

    void propose(MessageIn message, int id) {
        Commit proposal = message.payload;
        accepted = proposal;
        keyspace.savePaxosProposal(proposal);
        MessagingService.instance().sendReply(true, id, message.from);
    }

    void commit(MessageIn message) {
        Commit c = message.payload;
        if (c.ballot.timestamp() >= promised.ballot.timestamp()) {
            keyspace.savePaxosCommit(c);
        }
    }
}
