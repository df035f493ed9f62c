package org.flymc.hook;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Reporting events to flymc (the `events` and `cancel` endpoints) and the requests behind them. */
final class Events {
    private static final Map<String, Integer> seqs = new HashMap<>();

    static synchronized int nextSeq(String key) {
        int s = seqs.getOrDefault(key, 0);
        seqs.put(key, s + 1);
        return s;
    }

    /** Report one event; returns its id. */
    static String report(String kind, String name, int to, Object fields, Object payload, String channel,
        Integer peer) {
        return report(kind, name, to, fields, payload, channel, peer, null);
    }

    /** Report one event, for a timer with how long its node waits; returns its id. */
    static String report(String kind, String name, int to, Object fields, Object payload, String channel,
        Integer peer, Long delayMs) {
        String parent = Hook.current;
        String view = Quiescence.settled;
        if (view != null) {
            Hook.log("late: " + kind + " " + name + " from " + Thread.currentThread().getName()
                + " after the node said done; its threads then: " + view);
        }
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("parent", parent);
        e.put("seq", (long) nextSeq(parent + "|" + kind + "|" + name + "|" + to));
        e.put("kind", kind);
        e.put("name", name);
        e.put("to", (long) to);
        if (fields instanceof Map && !((Map<?, ?>) fields).isEmpty()) {
            e.put("fields", fields);
        }
        if (payload != null) {
            e.put("payload", payload);
        }
        if (channel != null) {
            e.put("channel", channel);
        }
        if (peer != null) {
            e.put("peer", (long) (int) peer);
        }
        if (delayMs != null) {
            e.put("delay_ms", delayMs);
        }
        Map<String, Object> body = base();
        List<Object> evs = new ArrayList<>();
        evs.add(e);
        body.put("events", evs);
        Map<String, Object> r = call("events", body);
        return (String) ((List<?>) r.get("ids")).get(0);
    }

    static void cancel(String id) {
        Map<String, Object> body = base();
        List<Object> ids = new ArrayList<>();
        ids.add(id);
        body.put("ids", ids);
        call("cancel", body);
    }

    /** A request from a node thread: it waits for the answer, but it is busy, not resting. */
    static Map<String, Object> call(String endpoint, Map<String, Object> body) {
        Thread me = Thread.currentThread();
        boolean pin = Rests.pinned.add(me);
        try {
            return Hook.net.post(endpoint, body, false);
        } finally {
            if (pin) {
                Rests.pinned.remove(me);
            }
            Rests.bump();
        }
    }

    static Map<String, Object> base() {
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("node", (long) Hook.node);
        b.put("incarnation", (long) Hook.incarnation);
        return b;
    }

    private Events() {}
}
