// The README's worked example: a Raft server whose RPC messages are generated protobuf classes
// (AppendEntriesRequest, VoteRequest: not in the sources, getters only) and whose log is an
// interface implemented through an abstract base.
import java.io.FileOutputStream;
import java.util.*;
import java.util.concurrent.atomic.AtomicReference;

interface RaftLog {
    long lastIndex();
    boolean matches(long index, long term);
    boolean isUpToDate(long term, long index);
    void append(List<Entry> es);
    default void append(Entry... es) { append(Arrays.asList(es)); }
}

abstract class AbstractLog implements RaftLog {
    public void append(List<Entry> es) {
        for (Entry e : es) {
            write(e);
        }
    }
    protected abstract void write(Entry e);
}

class SegmentedLog extends AbstractLog {
    List<Entry> entries = new ArrayList<>();
    public long lastIndex() { return entries.size(); }
    public boolean matches(long index, long term) { return index <= entries.size(); }
    public boolean isUpToDate(long term, long index) { return true; }
    protected void write(Entry e) {
        entries.add(e);
        new FileOutputStream("segment").write(e.toByteArray());
    }
}

class RaftServer {
    long currentTerm;
    PeerId votedFor;
    RaftLog log;
    MetaStore meta;
    final AtomicReference<PeerId> leaderId = new AtomicReference<>();

    AppendEntriesResponse appendEntries(AppendEntriesRequest req) {
        if (req.getTerm() < currentTerm) {
            return reply(false);
        }
        if (req.getTerm() > currentTerm) {
            currentTerm = req.getTerm();
            meta.persist(currentTerm, votedFor);
        }
        final PeerId cur = leaderId.get();
        if (cur == null || !cur.equals(req.getServerRequest().getRequestorId())) {
            leaderId.set(req.getServerRequest().getRequestorId());
        }
        if (!log.matches(req.getPrevLogIndex(), req.getPrevLogTerm())) {
            return reply(false);
        }
        log.append(req.getEntriesList());
        return reply(true);
    }

    AppendEntriesResponse reply(boolean ok) {
        return AppendEntriesResponse.newBuilder().setTerm(currentTerm).setSuccess(ok).build();
    }

    VoteResponse requestVote(VoteRequest req) {
        if (req.getTerm() > currentTerm) {
            currentTerm = req.getTerm();
            votedFor = null;
        }
        boolean granted = false;
        if (votedFor == null && log.isUpToDate(req.getLastLogTerm(), req.getLastLogIndex())) {
            votedFor = req.getCandidateId();
            meta.persist(currentTerm, votedFor);
            granted = true;
        }
        return VoteResponse.newBuilder().setTerm(currentTerm).setGranted(granted).build();
    }
}
