package org.flymc.hook;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The small expression language of the hook configuration: how to read a message's destination,
 * fields and payload from the intercepted call, and a node's state from its objects.
 *
 * <pre>
 *   arg0.sid                      field (private ones too) or no-argument method of a value
 *   this.sock.getPort()           method calls with arguments
 *   &#64;some.pkg.Helper.fields(arg0)  a static method of a class (integration helpers)
 *   peer != null &amp;&amp; n + 1 &lt; 3       comparisons, &amp;&amp; || !, + - on integers
 * </pre>
 * Variables come from the interception point: {@code this}, {@code arg0..argN}, captured
 * objects by name, {@code payload}, {@code from}, {@code node}, {@code nodes}.
 */
public final class Expr {
    interface Node {
        Object eval(Map<String, Object> env) throws Exception;
    }

    private final String src;
    private final Node root;

    private Expr(String src, Node root) {
        this.src = src;
        this.root = root;
    }

    public static Expr parse(String src) {
        Parser p = new Parser(src);
        Node n = p.or();
        p.ws();
        if (p.i != src.length()) {
            throw new IllegalArgumentException("cannot parse `" + src + "` at column " + (p.i + 1));
        }
        return new Expr(src, n);
    }

    public Object eval(Map<String, Object> env) {
        try {
            return root.eval(env);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new RuntimeException("evaluating `" + src + "`: " + e, e);
        }
    }

    @Override
    public String toString() {
        return src;
    }

    static long num(Object o) {
        if (o instanceof Number) {
            return ((Number) o).longValue();
        }
        if (o instanceof Character) {
            return (Character) o;
        }
        throw new IllegalArgumentException("not a number: " + o);
    }

    static boolean truth(Object o) {
        if (o instanceof Boolean) {
            return (Boolean) o;
        }
        return o != null;
    }

    static boolean same(Object a, Object b) {
        if (a instanceof Number && b instanceof Number) {
            return ((Number) a).longValue() == ((Number) b).longValue();
        }
        if (a instanceof Enum && b instanceof String) {
            return ((Enum<?>) a).name().equals(b);
        }
        return a == null ? b == null : a.equals(b);
    }

    private static final class Parser {
        final String s;
        int i;

        Parser(String s) {
            this.s = s;
        }

        void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        boolean eat(String t) {
            ws();
            if (s.startsWith(t, i)) {
                i += t.length();
                return true;
            }
            return false;
        }

        Node or() {
            Node l = and();
            while (eat("||")) {
                Node a = l, b = and();
                l = env -> truth(a.eval(env)) || truth(b.eval(env));
            }
            return l;
        }

        Node and() {
            Node l = cmp();
            while (eat("&&")) {
                Node a = l, b = cmp();
                l = env -> truth(a.eval(env)) && truth(b.eval(env));
            }
            return l;
        }

        Node cmp() {
            Node a = add();
            for (String op : new String[] {"==", "!=", "<=", ">=", "<", ">"}) {
                if (eat(op)) {
                    Node b = add();
                    switch (op) {
                    case "==": return env -> same(a.eval(env), b.eval(env));
                    case "!=": return env -> !same(a.eval(env), b.eval(env));
                    case "<=": return env -> num(a.eval(env)) <= num(b.eval(env));
                    case ">=": return env -> num(a.eval(env)) >= num(b.eval(env));
                    case "<": return env -> num(a.eval(env)) < num(b.eval(env));
                    default: return env -> num(a.eval(env)) > num(b.eval(env));
                    }
                }
            }
            return a;
        }

        Node add() {
            Node l = unary();
            while (true) {
                if (eat("+")) {
                    Node a = l, b = unary();
                    l = env -> {
                        Object x = a.eval(env), y = b.eval(env);
                        if (x instanceof String || y instanceof String) {
                            return String.valueOf(x) + y;
                        }
                        return num(x) + num(y);
                    };
                } else if (peekMinus()) {
                    i++;
                    Node a = l, b = unary();
                    l = env -> num(a.eval(env)) - num(b.eval(env));
                } else {
                    return l;
                }
            }
        }

        boolean peekMinus() {
            ws();
            return i < s.length() && s.charAt(i) == '-';
        }

        Node unary() {
            if (eat("!")) {
                Node a = unary();
                return env -> !truth(a.eval(env));
            }
            return postfix(primary());
        }

        String ident() {
            ws();
            int st = i;
            while (i < s.length() && (Character.isJavaIdentifierPart(s.charAt(i)))) {
                i++;
            }
            if (st == i) {
                throw new IllegalArgumentException("expected a name in `" + s + "` at column " + (i + 1));
            }
            return s.substring(st, i);
        }

        List<Node> args() {
            List<Node> a = new ArrayList<>();
            if (eat(")")) {
                return a;
            }
            do {
                a.add(or());
            } while (eat(","));
            if (!eat(")")) {
                throw new IllegalArgumentException("expected ')' in `" + s + "` at column " + (i + 1));
            }
            return a;
        }

        Node primary() {
            ws();
            if (eat("(")) {
                Node n = or();
                if (!eat(")")) {
                    throw new IllegalArgumentException("expected ')' in `" + s + "`");
                }
                return n;
            }
            char c = i < s.length() ? s.charAt(i) : '\0';
            if (c == '"') {
                int end = s.indexOf('"', i + 1);
                String lit = s.substring(i + 1, end);
                i = end + 1;
                return env -> lit;
            }
            if (Character.isDigit(c) || c == '-') {
                int st = i++;
                while (i < s.length() && Character.isDigit(s.charAt(i))) {
                    i++;
                }
                long v = Long.parseLong(s.substring(st, i));
                return env -> v;
            }
            if (c == '@') {
                i++;
                int st = i;
                while (i < s.length() && (Character.isJavaIdentifierPart(s.charAt(i)) || s.charAt(i) == '.'
                    || s.charAt(i) == '$')) {
                    i++;
                }
                String q = s.substring(st, i);
                int dot = q.lastIndexOf('.');
                String cls = q.substring(0, dot), name = q.substring(dot + 1);
                if (!eat("(")) {
                    throw new IllegalArgumentException("a static call needs arguments: `" + s + "`");
                }
                List<Node> args = args();
                return env -> {
                    Object[] v = new Object[args.size()];
                    for (int k = 0; k < v.length; k++) {
                        v[k] = args.get(k).eval(env);
                    }
                    Class<?> k = Class.forName(cls, true, Thread.currentThread().getContextClassLoader() != null
                        ? Thread.currentThread().getContextClassLoader() : ClassLoader.getSystemClassLoader());
                    return invoke(k, null, name, v);
                };
            }
            String id = ident();
            switch (id) {
            case "null": return env -> null;
            case "true": return env -> Boolean.TRUE;
            case "false": return env -> Boolean.FALSE;
            default:
                return env -> env.get(id);
            }
        }

        Node postfix(Node base) {
            while (true) {
                ws();
                if (i < s.length() && s.charAt(i) == '.') {
                    i++;
                    String name = ident();
                    Node b = base;
                    if (eat("(")) {
                        List<Node> args = args();
                        base = env -> {
                            Object o = b.eval(env);
                            if (o == null) {
                                return null; // null-safe: an absent leader reads as null
                            }
                            Object[] v = new Object[args.size()];
                            for (int k = 0; k < v.length; k++) {
                                v[k] = args.get(k).eval(env);
                            }
                            return invoke(o.getClass(), o, name, v);
                        };
                    } else {
                        base = env -> {
                            Object o = b.eval(env);
                            return o == null ? null : field(o, name);
                        };
                    }
                } else {
                    return base;
                }
            }
        }
    }

    private static final Map<String, Field> FIELDS = new ConcurrentHashMap<>();

    static Object field(Object o, String name) throws Exception {
        if (o instanceof Map) {
            return ((Map<?, ?>) o).get(name);
        }
        Class<?> c = o.getClass();
        String key = c.getName() + "#" + name;
        Field f = FIELDS.get(key);
        if (f == null) {
            for (Class<?> k = c; k != null && f == null; k = k.getSuperclass()) {
                for (Field x : k.getDeclaredFields()) {
                    if (x.getName().equals(name) && !Modifier.isStatic(x.getModifiers())) {
                        f = x;
                        break;
                    }
                }
            }
            if (f == null) {
                return invoke(c, o, name, new Object[0]);
            }
            f.setAccessible(true);
            FIELDS.put(key, f);
        }
        return f.get(o);
    }

    static Object invoke(Class<?> c, Object target, String name, Object[] args) throws Exception {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            for (Method m : k.getDeclaredMethods()) {
                if (!m.getName().equals(name) || m.getParameterCount() != args.length
                    || (target == null) != Modifier.isStatic(m.getModifiers())) {
                    continue;
                }
                Class<?>[] pt = m.getParameterTypes();
                Object[] conv = new Object[args.length];
                boolean ok = true;
                for (int j = 0; j < args.length && ok; j++) {
                    conv[j] = convert(args[j], pt[j]);
                    ok = conv[j] != NO;
                }
                if (!ok) {
                    continue;
                }
                m.setAccessible(true);
                try {
                    return m.invoke(target, conv);
                } catch (java.lang.reflect.InvocationTargetException e) {
                    Throwable t = e.getCause();
                    if (t instanceof Exception) {
                        throw (Exception) t;
                    }
                    throw e;
                }
            }
        }
        throw new NoSuchMethodException(c.getName() + "." + name + " with " + args.length + " arguments");
    }

    private static final Object NO = new Object();

    private static Object convert(Object v, Class<?> t) {
        if (v == null) {
            return t.isPrimitive() ? NO : null;
        }
        if (t == long.class || t == Long.class) {
            return v instanceof Number ? (Object) ((Number) v).longValue() : NO;
        }
        if (t == int.class || t == Integer.class) {
            return v instanceof Number ? (Object) ((Number) v).intValue() : NO;
        }
        if (t == boolean.class || t == Boolean.class) {
            return v instanceof Boolean ? v : NO;
        }
        if (t.isPrimitive()) {
            return NO;
        }
        return t.isInstance(v) ? v : NO;
    }
}
