package org.flymc.hook;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/** Exception capture: what `exception` points saw, one record per Throwable, for the state. */
final class Exceptions {
    /**
     * What `exception` points saw, in order: one record per Throwable, made where it was first
     * seen (the innermost configured handler that caught it, or configured method it escaped).
     * The hook adds it to every state it reports as the variable `exceptions`.
     */
    static final List<Map<String, Object>> exceptions =
        java.util.Collections.synchronizedList(new ArrayList<>());
    /** Throwables already recorded (by identity: Throwable keeps Object's equals). */
    private static final Map<Throwable, Boolean> seenThrowables =
        java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());
    private static final ThreadLocal<Boolean> noting = new ThreadLocal<>();

    /** IPv4 addresses with their ports: they differ from run to run (free ports), so a
     *  message keeps `<addr>` instead and states stay comparable. */
    static final Pattern ADDRESS = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}(:\\d+)?");

    /** How many stack frames a record keeps. */
    static final int FRAMES = 5;

    static void note(Throwable t, String where, boolean escaped) {
        // getMessage() may run instrumented code that catches exceptions of its own.
        if (t == null || noting.get() != null) {
            return;
        }
        noting.set(Boolean.TRUE);
        try {
            if (seenThrowables.put(t, Boolean.TRUE) != null) {
                return;
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("type", t.getClass().getName());
            String msg;
            try {
                msg = t.getMessage();
            } catch (RuntimeException e) {
                msg = null;
            }
            r.put("message", msg != null ? ADDRESS.matcher(msg).replaceAll("<addr>") : null);
            r.put("where", where);
            List<Object> frames = new ArrayList<>();
            for (StackTraceElement f : t.getStackTrace()) {
                if (frames.size() == FRAMES) {
                    break;
                }
                // The hook's own frames (a read that throws for a lost connection) and its
                // bridges say nothing about the system.
                if (f.getClassName().startsWith("org.flymc.hook.") || f.getMethodName().startsWith("flymc$")) {
                    continue;
                }
                frames.add(f.getClassName() + "." + f.getMethodName() + ":" + f.getLineNumber());
            }
            r.put("frames", frames);
            if (escaped) {
                r.put("escaped", Boolean.TRUE);
            }
            exceptions.add(r);
            if (TRACE_EXCEPTIONS) {
                Hook.log("exception " + r);
            }
        } finally {
            noting.remove();
        }
        Rests.bump();
    }

    /** FLYMC_HOOK_TRACE=1: log every exception record as it is made. */
    static final boolean TRACE_EXCEPTIONS = System.getenv("FLYMC_HOOK_TRACE") != null;

    /**
     * The records so far, for the state (null when there are none, so the state stays as it
     * was), sorted by their JSON text: threads that record during one event race, and the
     * state must not depend on which came first.
     */
    static List<Object> exceptionRecords() {
        List<String> keys = new ArrayList<>();
        Map<String, List<Map<String, Object>>> byKey = new HashMap<>();
        synchronized (exceptions) {
            if (exceptions.isEmpty()) {
                return null;
            }
            for (Map<String, Object> r : exceptions) {
                String k = Json.write(r);
                keys.add(k);
                byKey.computeIfAbsent(k, x -> new ArrayList<>()).add(r);
            }
        }
        java.util.Collections.sort(keys);
        List<Object> out = new ArrayList<>();
        for (String k : keys) {
            out.add(byKey.get(k).remove(0));
        }
        return out;
    }

    private Exceptions() {}
}
