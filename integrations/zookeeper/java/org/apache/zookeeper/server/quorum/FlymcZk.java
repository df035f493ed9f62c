package org.apache.zookeeper.server.quorum;

import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.apache.zookeeper.AsyncCallback;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.ZooKeeperServer;
import org.apache.zookeeper.server.quorum.QuorumPeer.ServerState;

/**
 * The ZooKeeper integration's helpers for flymc's Java hook (integrations/zookeeper/hooks.toml
 * names them): how an FLE notification becomes event fields and is delivered at the receiver,
 * what a ZAB packet is called, and the node state flymc checks and compares.
 *
 * It lives in ZooKeeper's quorum package so it can use the package-private message classes.
 * Node n runs server id (sid) n + 1; fields and state keep ZooKeeper's sids.
 */
public final class FlymcZk {
    private FlymcZk() {}

    public static long node(long sid) {
        return sid - 1;
    }

    /** Set by flymc for a workload with `staggered_start`: hold the first election. */
    static final String STAGGERED = "flymc.zk.staggeredStart";
    private static final java.util.concurrent.atomic.AtomicBoolean STARTED =
        new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * Whether this election is the process's first one and must wait for flymc's `start` timer:
     * true once per incarnation (a process), and only under a staggered start.
     */
    public static boolean heldStart() {
        return Boolean.getBoolean(STAGGERED) && STARTED.compareAndSet(false, true);
    }

    // ---------------------------------------------------------------- disk writes

    /** Fields of a crash-point write: the value it writes (an epoch, a snapshot's zxid). */
    public static Map<String, Object> written(Object value) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("value", value);
        return m;
    }

    /** Fields of a transaction log flush: the highest zxid it makes durable. */
    public static Map<String, Object> flushed(Collection<?> toFlush) {
        long last = -1;
        for (Object o : toFlush) {
            org.apache.zookeeper.txn.TxnHeader h = ((org.apache.zookeeper.server.Request) o).getHdr();
            if (h != null) {
                last = Math.max(last, h.getZxid());
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("zxid", last);
        return m;
    }

    // ---------------------------------------------------------------- client writes

    /** Zxids of writes this node's client saw acknowledged, in order. */
    static final List<Long> acked = java.util.Collections.synchronizedList(new ArrayList<>());
    /** Writes the workload sent here while the node did not serve yet (a client retries). */
    static final List<Object> pendingWrites = java.util.Collections.synchronizedList(new ArrayList<>());
    static ZooKeeper client;
    static int written;

    /** A client request of the workload: a create through a real ZooKeeper client. */
    public static void clientWrite(QuorumPeer peer, Object fields) {
        pendingWrites.add(fields);
        flushClients(peer);
    }

    /** How long a write may take to reach the node's own request pipeline (a generous bound). */
    private static final long CLIENT_WAIT_NS = 20_000_000_000L;

    /**
     * Send the next waiting write once the node serves; true when it sent one.
     *
     * The client talks to this node's own server over a real socket, and while a request is on
     * the wire (or in the request throttler) no thread of the node looks busy, so the hook
     * could report the node at rest before the request is proposed or forwarded, and a re-run
     * of the same path would see the proposal one event later. So this returns only once the
     * server has taken the write into its request pipeline (its in-process count grew); from
     * there ZooKeeper's own threads and queues carry it, which the hook watches.
     */
    public static boolean flushClients(QuorumPeer peer) {
        if (pendingWrites.isEmpty() || peer == null) {
            return false;
        }
        ZooKeeperServer zks = peer.getActiveServer();
        if (zks == null || !zks.isRunning() || peer.getZabState() != QuorumPeer.ZabState.BROADCAST) {
            return false;
        }
        try {
            if (client == null) {
                java.net.InetSocketAddress a = peer.getClientAddress();
                client = new ZooKeeper(a.getHostString() + ":" + a.getPort(), 100_000_000, e -> { });
            }
            ZooKeeper c = client;
            // The session is local (zoo.cfg), so connecting needs no other node.
            if (!await(() -> c.getState().isConnected())) {
                System.err.println("flymc: the workload's client did not connect to its node; writes stay pending");
                return false;
            }
            AsyncCallback.Create2Callback done = (rc, path, ctx, name, stat) -> {
                if (rc == 0 && stat != null) {
                    acked.add(stat.getCzxid());
                }
            };
            // One write per call: the hook calls again once the node rests, so each write is
            // proposed and parked at its log flush before the next arrives, and ZooKeeper's
            // group commit does not batch them one run and not the next.
            long target = zks.getInProcess() + 1;
            Object f = pendingWrites.remove(0);
            c.create("/flymc-" + (written++), String.valueOf(f).getBytes(StandardCharsets.UTF_8),
                ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT, done, null);
            if (!await(() -> zks.getInProcess() >= target || !c.getState().isConnected())) {
                System.err.println("flymc: the node's server did not take the workload's writes in time");
            }
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /** Wait for a condition another thread makes true (polled: ZooKeeper offers no signal). */
    private static boolean await(java.util.function.BooleanSupplier cond) {
        long end = System.nanoTime() + CLIENT_WAIT_NS;
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > end) {
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(200_000L);
        }
        return true;
    }

    /** Zxids of the workload's writes in this node's data tree. */
    static List<Long> treeZxids(QuorumPeer peer) {
        List<Long> out = new ArrayList<>();
        try {
            DataTree dt = peer.getZkDb().getDataTree();
            java.util.Set<String> kids = dt.getNode("/").getChildren();
            for (String k : new TreeSet<>(kids)) {
                if (k.startsWith("flymc-")) {
                    Stat st = dt.statNode("/" + k, null);
                    out.add(st.getCzxid());
                }
            }
        } catch (Exception e) {
            // no tree yet
        }
        java.util.Collections.sort(out);
        return out;
    }

    /** The node of a learner handler's peer, once its FOLLOWERINFO told the sid. */
    public static Object peerNode(long sid) {
        return sid == 0 ? null : (Object) node(sid);
    }

    /** Only notifications (FLE's ToSend) are messages; other offers pass through. */
    public static boolean isNotification(Object o) {
        return o instanceof FastLeaderElection.ToSend;
    }

    public static Map<String, Object> notificationFields(Object o, QuorumPeer peer) {
        FastLeaderElection.ToSend m = (FastLeaderElection.ToSend) o;
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("sid", peer.getId());
        f.put("leader", m.leader);
        f.put("zxid", m.zxid);
        f.put("electionEpoch", m.electionEpoch);
        f.put("peerEpoch", m.peerEpoch);
        f.put("state", m.state.name());
        return f;
    }

    public static Map<String, Object> notificationPayload(Object o) {
        FastLeaderElection.ToSend m = (FastLeaderElection.ToSend) o;
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("config", new String(m.configData, StandardCharsets.UTF_8));
        return p;
    }

    /** Deliver a notification the way RecvWorker does: into the connection manager's queue. */
    @SuppressWarnings("unchecked")
    public static void deliverNotification(QuorumPeer peer, Object fields, Object payload, long fromNode) {
        Map<String, Object> f = (Map<String, Object>) fields;
        Map<String, Object> p = (Map<String, Object>) payload;
        ServerState st = ServerState.valueOf((String) f.get("state"));
        byte[] config = ((String) p.get("config")).getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = FastLeaderElection.buildMsg(st.ordinal(), num(f.get("leader")), num(f.get("zxid")),
            num(f.get("electionEpoch")), num(f.get("peerEpoch")), config);
        QuorumCnxManager qcm = peer.getQuorumCnxManager();
        if (qcm != null) {
            qcm.addToRecvQueue(new QuorumCnxManager.Message(b, fromNode + 1));
        }
    }

    private static long num(Object o) {
        return ((Number) o).longValue();
    }

    public static String packetName(Object qp) {
        return Leader.getPacketType(((QuorumPacket) qp).getType());
    }

    public static Map<String, Object> packetFields(Object o) {
        QuorumPacket qp = (QuorumPacket) o;
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("type", Leader.getPacketType(qp.getType()));
        f.put("zxid", qp.getZxid());
        return f;
    }

    /**
     * Has the leader lost the quorum of synced followers its tick checks for? Only then does its
     * tick (a flymc timer) matter: it pings and, on the second tick, steps down.
     */
    public static boolean quorumLost(Leader l) {
        QuorumPeer self = l.self;
        java.util.Set<Long> synced = new java.util.HashSet<>();
        synced.add(self.getId());
        for (LearnerHandler h : l.getLearners()) {
            if (h.synced() && h.getSid() != 0) {
                synced.add(h.getSid());
            }
        }
        return !self.getQuorumVerifier().containsQuorum(synced);
    }

    /** The learner's leader, as a node index (null while unknown). */
    public static Object leaderNode(QuorumPeer peer) {
        Vote v = peer.getCurrentVote();
        return v == null ? null : (Object) node(v.getId());
    }

    private static Object field(Object o, String name) {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // superclass
            } catch (IllegalAccessException e) {
                return null;
            }
        }
        return null;
    }

    private static Object size(Object c) {
        if (c instanceof Collection) {
            return (long) ((Collection<?>) c).size();
        }
        if (c instanceof Map) {
            return (long) ((Map<?, ?>) c).size();
        }
        return null;
    }

    private static List<Long> sorted(Collection<Long> c) {
        return new ArrayList<>(new TreeSet<>(c));
    }

    /**
     * Everything that decides the node's future behaviour, under the variable names of the
     * analyzer's sets file (integrations/zookeeper/sets.json), plus `leader` (the node it follows
     * or leads), `established` and `uncaught` for the properties. Values that depend on thread
     * timing inside the node (a learner handler that accepted a socket but has not read from it)
     * are left out so equal histories give equal states.
     */
    public static Map<String, Object> state(QuorumPeer peer, Object uncaught) {
        Map<String, Object> s = new LinkedHashMap<>();
        if (peer == null) {
            s.put("state", "STARTING");
            return s;
        }
        ServerState st = peer.getPeerState();
        s.put("state", st.name());
        s.put("zabState", peer.getZabState().name());
        try {
            s.put("currentEpoch", peer.getCurrentEpoch());
            s.put("acceptedEpoch", peer.getAcceptedEpoch());
        } catch (Exception e) {
            s.put("currentEpoch", null);
            s.put("acceptedEpoch", null);
        }
        Vote v = peer.getCurrentVote();
        Map<String, Object> cv = new LinkedHashMap<>();
        if (v != null) {
            cv.put("leader", v.getId());
            cv.put("zxid", v.getZxid());
            cv.put("electionEpoch", v.getElectionEpoch());
            cv.put("peerEpoch", v.getPeerEpoch());
        }
        s.put("currentVote", cv);
        Election e = peer.getElectionAlg();
        if (e instanceof FastLeaderElection) {
            FastLeaderElection fle = (FastLeaderElection) e;
            s.put("logicalclock", fle.getLogicalClock());
            s.put("proposedLeader", fle.proposedLeader);
            s.put("proposedZxid", fle.proposedZxid);
            s.put("proposedEpoch", fle.proposedEpoch);
        } else {
            s.put("logicalclock", null);
            s.put("proposedLeader", null);
            s.put("proposedZxid", null);
            s.put("proposedEpoch", null);
        }
        // lookForLeader's local vote tables are not reachable from outside the method.
        s.put("recvset", null);
        s.put("outofelection", null);
        long last = peer.getLastLoggedZxid();
        s.put("lastProcessedZxid", last);
        s.put("txnlog", last);
        Leader l = peer.leader;
        boolean leading = l != null && st == ServerState.LEADING;
        s.put("epoch", leading ? l.epoch : null);
        s.put("waitingForNewEpoch", leading ? l.waitingForNewEpoch : null);
        s.put("connectingFollowers", leading ? sorted(l.connectingFollowers) : null);
        s.put("electingFollowers", leading ? sorted(l.electingFollowers) : null);
        s.put("electionFinished", leading ? l.electionFinished : null);
        s.put("quorumFormed", leading ? l.quorumFormed : null);
        s.put("lastCommitted", leading ? l.lastCommitted : null);
        s.put("lastProposed", leading ? l.lastProposed : null);
        s.put("outstandingProposals", leading ? sorted(l.outstandingProposals.keySet()) : null);
        s.put("toBeApplied", leading ? size(field(l, "toBeApplied")) : null);
        s.put("pendingSyncs", leading ? size(field(l, "pendingSyncs")) : null);
        s.put("newLeaderProposal", leading && l.newLeaderProposal.qvAcksetPairs.size() > 0
            ? sorted(l.newLeaderProposal.qvAcksetPairs.get(0).getAckset()) : null);
        List<Long> learners = new ArrayList<>();
        List<Long> forwarding = new ArrayList<>();
        if (leading) {
            for (LearnerHandler h : l.getLearners()) {
                if (h.getSid() != 0) {
                    learners.add(h.getSid());
                }
            }
            for (LearnerHandler h : l.getForwardingFollowers()) {
                forwarding.add(h.getSid());
            }
        }
        s.put("learners", leading ? sorted(learners) : null);
        s.put("forwardingFollowers", leading ? sorted(forwarding) : null);
        Follower f = peer.follower;
        boolean following = f != null && st == ServerState.FOLLOWING;
        s.put("leaderProtocolVersion", following ? field(f, "leaderProtocolVersion") : null);
        s.put("lastQueued", following ? field(f, "lastQueued") : null);
        s.put("pendingRevalidations", following ? (long) f.getPendingRevalidationsCount() : null);
        Object fzk = following ? field(f, "fzk") : null;
        s.put("pendingTxns", fzk != null ? size(field(fzk, "pendingTxns")) : null);
        // syncWithLeader's locals and the commit processor's queue are not reachable either.
        s.put("packetsCommitted", null);
        s.put("packetsNotCommitted", null);
        s.put("committedRequests", null);
        Object leaderNode = null;
        boolean established = false;
        if (leading) {
            leaderNode = node(peer.getId());
            established = peer.getZabState() != QuorumPeer.ZabState.DISCOVERY;
        } else if (following) {
            leaderNode = leaderNode(peer);
            established = peer.getZabState() == QuorumPeer.ZabState.BROADCAST;
        }
        s.put("leader", leaderNode);
        s.put("established", established);
        s.put("uncaught", uncaught);
        s.put("acked", new ArrayList<>(acked));
        s.put("log", treeZxids(peer));
        s.put("pendingWrites", (long) pendingWrites.size());
        return s;
    }
}
