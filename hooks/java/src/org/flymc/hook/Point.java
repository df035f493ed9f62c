package org.flymc.hook;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** One configured interception point (see hooks/java/README.md for the configuration format). */
final class Point {
    /** send, suppress, timer, read, close, disk, capture, record, wake, deliver, client, exception. */
    final String kind;
    final int id;
    /** Class name prefix (internal form, a/b/C) the point applies in; for capture the exact class;
     *  for exception a class or, ending in '/', a package prefix. */
    final String in;
    /** Method the point is in (call sites) or at (entry); null = any. */
    final String method;
    /** The call site to rewrite: owner.name(desc), owner in internal form. */
    final String callOwner, callName, callDesc;
    /** Which matching call in the method (1-based); 0 = every one. */
    final int occurrence;
    final String name;
    final Expr nameExpr, when, to, fields, payload, channel, conn, peer, action, returns;
    /** For reads: the timer that ends a read no packet answers (the socket's read timeout), and
     *  when it applies (null: always). */
    final String timeout;
    final Expr timeoutWhen;
    /** Perform the original call after reporting (send), or not (suppress). */
    final boolean proceed;
    /** For timers over Object.wait/sleep: advance the virtual clock to the deadline when fired. */
    final boolean clock;

    Point(int id, Map<String, Object> m) {
        this.id = id;
        this.kind = str(m, "kind", null);
        if (kind == null) {
            throw new IllegalArgumentException("a hook point has no kind: " + m);
        }
        this.in = slash(str(m, "in", ""));
        this.method = str(m, "method", null);
        String call = str(m, "call", null);
        if (call != null) {
            int paren = call.indexOf('(');
            int dot = call.lastIndexOf('.', paren);
            this.callOwner = slash(call.substring(0, dot));
            this.callName = call.substring(dot + 1, paren);
            this.callDesc = call.substring(paren);
        } else {
            this.callOwner = this.callName = this.callDesc = null;
        }
        this.occurrence = (int) (long) (Long) m.getOrDefault("occurrence", 0L);
        String n = str(m, "name", null);
        if (n != null && n.startsWith("=")) {
            this.name = null;
            this.nameExpr = Expr.parse(n.substring(1));
        } else {
            this.name = n;
            this.nameExpr = null;
        }
        this.when = expr(m, "when");
        this.to = expr(m, "to");
        this.fields = expr(m, "fields");
        this.payload = expr(m, "payload");
        this.channel = expr(m, "channel");
        this.conn = expr(m, "conn");
        this.peer = expr(m, "peer");
        this.action = expr(m, "do");
        this.returns = expr(m, "returns");
        this.timeout = str(m, "timeout", null);
        this.timeoutWhen = expr(m, "timeout_when");
        this.proceed = Boolean.TRUE.equals(m.getOrDefault("proceed", Boolean.TRUE));
        this.clock = Boolean.TRUE.equals(m.getOrDefault("clock", Boolean.FALSE));
    }

    static String slash(String s) {
        return s.replace('.', '/');
    }

    private static String str(Map<String, Object> m, String k, String d) {
        Object v = m.get(k);
        return v == null ? d : v.toString();
    }

    private static Expr expr(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v == null ? null : Expr.parse(v.toString());
    }

    /** The class itself or one of its nested classes (not every class whose name it prefixes). */
    boolean inClass(String cls) {
        return cls.equals(in) || cls.startsWith(in + "$");
    }

    boolean matchesCall(String cls, String meth, String owner, String nm, String desc) {
        return callOwner != null && inClass(cls) && (method == null || method.equals(meth))
            && callName.equals(nm) && callDesc.equals(desc) && (callOwner.equals(owner) || callOwner.equals("*"));
    }

    /**
     * An exception point covers method meth of class cls: `in` is that class (or an outer class
     * of it) or a package prefix ending in '.', and `method`, if given, is meth.
     */
    boolean coversHandlers(String cls, String meth) {
        if (!kind.equals("exception") || (method != null && !method.equals(meth))) {
            return false;
        }
        return in.endsWith("/") ? cls.startsWith(in) : inClass(cls);
    }

    String name(Map<String, Object> env) {
        return nameExpr != null ? String.valueOf(nameExpr.eval(env)) : name;
    }

    static List<Point> list(Object raw) {
        List<Point> out = new ArrayList<>();
        if (raw instanceof List) {
            for (Object o : (List<?>) raw) {
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) o;
                out.add(new Point(out.size(), m));
            }
        }
        return out;
    }
}
