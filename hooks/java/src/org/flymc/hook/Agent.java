package org.flymc.hook;

import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Handle;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.commons.AdviceAdapter;
import org.objectweb.asm.commons.Method;

/**
 * flymc's Java hook: {@code -javaagent:flymc-hook.jar=CONFIG.json}. The configuration (written
 * by flymc from the integration's hooks.toml) says which classes to instrument and where the
 * messages, timers, disk writes and state are; this class rewrites those classes as they load
 * and then speaks the hook protocol (hooks/PROTOCOL.md) for the node.
 */
public final class Agent {
    private Agent() {}

    @SuppressWarnings("unchecked")
    public static void premain(String args, Instrumentation inst) throws Exception {
        if (args == null || args.isEmpty()) {
            throw new IllegalArgumentException("flymc-hook: pass the configuration: -javaagent:flymc-hook.jar=FILE");
        }
        Map<String, Object> cfg = (Map<String, Object>) Json.parse(
            new String(Files.readAllBytes(Paths.get(args)), StandardCharsets.UTF_8));
        Hook.config = cfg;
        Hook.points = Point.list(cfg.get("points"));
        for (Point p : Hook.points) {
            if (p.kind.equals("record")) {
                Hook.captures.put(p.name, Hook.recorded);
            }
        }
        for (Object o : (List<Object>) cfg.getOrDefault("ignore_threads", new ArrayList<>())) {
            Quiescence.ignoreThreads.add(Pattern.compile(o.toString()));
        }
        for (Object o : (List<Object>) cfg.getOrDefault("idle_frames", new ArrayList<>())) {
            Quiescence.idleFrames.add(o.toString());
        }
        Hook.node = Integer.parseInt(env("FLYMC_NODE"));
        Hook.nodes = Integer.parseInt(env("FLYMC_NODES"));
        Hook.incarnation = Integer.parseInt(env("FLYMC_INCARNATION"));
        Hook.net = new Net(env("FLYMC_SERVER"), env("FLYMC_TOKEN"));
        List<String> prefixes = new ArrayList<>();
        for (Object o : (List<Object>) cfg.getOrDefault("instrument", new ArrayList<>())) {
            prefixes.add(Point.slash(o.toString()));
        }
        List<String> skip = new ArrayList<>();
        for (Object o : (List<Object>) cfg.getOrDefault("skip", new ArrayList<>())) {
            skip.add(Point.slash(o.toString()));
        }
        Backlog.init(inst);
        inst.addTransformer(new Rewriter(prefixes, skip), false);

        Map<String, Object> reg = new LinkedHashMap<>();
        reg.put("protocol", 1L);
        reg.put("node", (long) Hook.node);
        reg.put("incarnation", (long) Hook.incarnation);
        reg.put("pid", ProcessHandle.current().pid());
        if (System.getenv("FLYMC_RESUME") != null) {
            reg.put("pausable", true);
            reg.put("resumes", true);
        }
        // A thread parked at a crash point holds only itself: the others take their orders
        // meanwhile, so flymc may choose what this node does before the write.
        reg.put("threads", true);
        Hook.net.post("register", reg, false);

        Expr ready = cfg.get("ready_when") != null ? Expr.parse(cfg.get("ready_when").toString()) : null;
        Expr state = cfg.get("state") != null ? Expr.parse(cfg.get("state").toString()) : null;
        Expr afterEvent = cfg.get("after_event") != null ? Expr.parse(cfg.get("after_event").toString()) : null;
        Thread t = new Thread(() -> run(ready, state, afterEvent), "flymc-dispatch");
        t.setDaemon(true);
        Quiescence.agentThreads.add(t);
        t.start();
    }

    private static String env(String k) {
        String v = System.getenv(k);
        if (v == null) {
            throw new IllegalStateException("flymc-hook: " + k + " is not set; flymc starts nodes with it");
        }
        return v;
    }

    private static Object state(Expr state) {
        if (state == null) {
            return new LinkedHashMap<>();
        }
        try {
            return state.eval(new LinkedHashMap<>(Hook.captures));
        } catch (RuntimeException e) {
            Hook.log("cannot read the node state: " + e);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("state_error", e.toString());
            return m;
        }
    }

    private static void done(String id, Expr state) {
        Map<String, Object> b = Events.base();
        b.put("event", id);
        b.put("state", reported(state));
        Hook.net.post("done", b, false);
    }

    /** The state a node reports: the integration's state expression and what it caught. */
    @SuppressWarnings("unchecked")
    private static Object reported(Expr state) {
        Object s = state(state);
        // Generic for every system whose state is an object: what `exception` points recorded
        // this incarnation; absent while there is nothing, so such states hash as before.
        List<Object> ex = Exceptions.exceptionRecords();
        if (ex != null && s instanceof Map) {
            Map<String, Object> m = new LinkedHashMap<>((Map<String, Object>) s);
            m.put("exceptions", ex);
            s = m;
        }
        return s;
    }

    /** Startup, then the order loop: one enabled event at a time, each until the node rests. */
    @SuppressWarnings("unchecked")
    private static void run(Expr ready, Expr state, Expr afterEvent) {
        try {
            long t0 = System.nanoTime();
            while (ready != null && !Expr.truth(safe(ready))) {
                Thread.sleep(5); // startup: poll until the node's main objects exist
                if (System.nanoTime() - t0 > 5_000_000_000L) {
                    t0 = System.nanoTime();
                    Hook.log("not ready yet: " + ready + " (captured: " + Hook.captures.keySet() + ")");
                }
            }
            Quiescence.awaitQuiet();
            done(null, state);
            long after = 0;
            while (true) {
                Map<String, Object> req = Events.base();
                req.put("after", after);
                req.put("wait_ms", 25000L);
                Map<String, Object> r = Hook.net.post("poll", req, true);
                Object pause = r.get("pause");
                for (Object o : (List<Object>) r.get("orders")) {
                    Map<String, Object> order = (Map<String, Object>) o;
                    after = Math.max(after, ((Number) order.get("seq")).longValue());
                    String id = (String) ((Map<String, Object>) order.get("event")).get("id");
                    long began = System.nanoTime();
                    Orders.dispatch(order);
                    Quiescence.awaitQuiet();
                    long ms = (System.nanoTime() - began) / 1_000_000;
                    if (TRACE && ms > 50) {
                        Hook.log("event " + id + " took " + ms + " ms; last busy: " + Quiescence.lastBusySeen);
                    }
                    if (TRACE) {
                        Hook.log("quiet checks so far: " + Quiescence.exactQuiet + " exact, " + Quiescence.sampledQuiet
                            + " sampled" + (Quiescence.inexactBy != null ? " (last because of " + Quiescence.inexactBy + ")" : ""));
                    }
                    // Work the integration does once the node rests (e.g. a client's waiting
                    // request, sent when the node serves), part of the same event.
                    while (afterEvent != null && Expr.truth(safe(afterEvent))) {
                        Quiescence.awaitQuiet();
                    }
                    done(id, state);
                }
                if (pause != null) {
                    pause(((Number) pause).longValue(), state);
                }
            }
        } catch (Throwable e) {
            Hook.log("dispatcher failed: " + e);
            e.printStackTrace();
            Runtime.getRuntime().halt(76);
        }
    }

    /**
     * A checkpoint (hooks/PROTOCOL.md, pause): say so, hold no connection to flymc while the
     * process is snapshotted, and go on when flymc writes to FLYMC_RESUME — in this process and
     * in every copy restored from the snapshot, each on connections of its own.
     */
    private static void pause(long n, Expr state) throws java.io.IOException {
        Map<String, Object> b = Events.base();
        b.put("pause", n);
        Hook.net.post("paused", b, false);
        Hook.net = Hook.net.fresh();
        // Blocks in open() until flymc opens the pipe for writing, then reads to its end.
        java.nio.file.Files.readAllBytes(java.nio.file.Path.of(env("FLYMC_RESUME")));
        // Going on (this JVM, or a copy restored from its snapshot): the state as this process
        // finds it, read afresh, for flymc to check against the one recorded before the pause.
        Map<String, Object> r = Events.base();
        r.put("pause", n);
        r.put("state", reported(state));
        Hook.net.post("resumed", r, false);
    }

    private static Object safe(Expr e) {
        try {
            return e.eval(new LinkedHashMap<>(Hook.captures));
        } catch (RuntimeException x) {
            return null;
        }
    }

    // ---------------------------------------------------------------- bytecode rewriting

    static final String HOOK = "org/flymc/hook/Hook";
    /** FLYMC_HOOK_TRACE=1: log events that take long to settle, and what kept the node busy. */
    static final boolean TRACE = System.getenv("FLYMC_HOOK_TRACE") != null;

    static final class Rewriter implements ClassFileTransformer {
        final List<String> prefixes, skip;

        Rewriter(List<String> prefixes, List<String> skip) {
            this.prefixes = prefixes;
            this.skip = skip;
        }

        @Override
        public byte[] transform(ClassLoader loader, String name, Class<?> cls, ProtectionDomain pd, byte[] bytes) {
            if (name == null || name.startsWith("org/flymc/")) {
                return null;
            }
            boolean match = false;
            for (String p : prefixes) {
                match |= name.startsWith(p);
            }
            for (String s : skip) {
                match &= !name.startsWith(s);
            }
            if (!match) {
                return null;
            }
            try {
                ClassReader cr = new ClassReader(bytes);
                ClassWriter cw = new ClassWriter(cr, ClassWriter.COMPUTE_MAXS);
                List<Bridge> bridges = new ArrayList<>();
                boolean itf = (cr.getAccess() & Opcodes.ACC_INTERFACE) != 0;
                cr.accept(new ClassVisitor(Opcodes.ASM9, cw) {
                    @Override
                    public MethodVisitor visitMethod(int acc, String m, String desc, String sig, String[] ex) {
                        MethodVisitor mv = super.visitMethod(acc, m, desc, sig, ex);
                        return new Site(mv, acc, m, desc, name, bridges, itf);
                    }

                    @Override
                    public void visitEnd() {
                        for (Bridge b : bridges) {
                            b.emit(cv);
                        }
                        super.visitEnd();
                    }
                }, ClassReader.EXPAND_FRAMES);
                return cw.toByteArray();
            } catch (Throwable e) {
                Hook.log("cannot instrument " + name + ": " + e);
                return null;
            }
        }
    }

    /** A generated static method: (receiver?, args..., this) -> Hook.point(id, receiver, this, args[]). */
    static final class Bridge {
        final String name, desc;
        final int id;
        final boolean hasRecv;
        final Type[] args;
        final Type ret;

        Bridge(String name, String desc, int id, boolean hasRecv, Type[] args, Type ret) {
            this.name = name;
            this.desc = desc;
            this.id = id;
            this.hasRecv = hasRecv;
            this.args = args;
            this.ret = ret;
        }

        void emit(ClassVisitor cv) {
            MethodVisitor mv = cv.visitMethod(Opcodes.ACC_PRIVATE | Opcodes.ACC_STATIC | Opcodes.ACC_SYNTHETIC,
                name, desc, null, null);
            org.objectweb.asm.commons.GeneratorAdapter g =
                new org.objectweb.asm.commons.GeneratorAdapter(mv, Opcodes.ACC_PRIVATE | Opcodes.ACC_STATIC, name, desc);
            g.visitCode();
            int first = hasRecv ? 1 : 0;
            g.push(id);
            if (hasRecv) {
                g.loadArg(0);
            } else {
                g.visitInsn(Opcodes.ACONST_NULL);
            }
            g.loadArg(first + args.length);
            g.push(args.length);
            g.newArray(Type.getType(Object.class));
            for (int i = 0; i < args.length; i++) {
                g.dup();
                g.push(i);
                g.loadArg(first + i);
                g.box(args[i]);
                g.arrayStore(Type.getType(Object.class));
            }
            g.invokeStatic(Type.getObjectType(HOOK), Method.getMethod("Object point(int, Object, Object, Object[])"));
            if (ret.getSort() == Type.VOID) {
                g.pop();
            } else {
                g.unbox(ret);
            }
            g.returnValue();
            g.endMethod();
        }
    }

    static final java.util.Set<String> QUEUES = java.util.Set.of(
        "java/util/concurrent/BlockingQueue", "java/util/concurrent/LinkedBlockingQueue",
        "java/util/concurrent/ArrayBlockingQueue", "java/util/concurrent/LinkedBlockingDeque",
        "java/util/concurrent/BlockingDeque", "java/util/concurrent/PriorityBlockingQueue");

    static final java.util.Set<String> EXECUTORS = java.util.Set.of(
        "java/util/concurrent/ExecutorService", "java/util/concurrent/ThreadPoolExecutor",
        "java/util/concurrent/ScheduledThreadPoolExecutor", "java/util/concurrent/ScheduledExecutorService");

    /** Rewrites one method: configured points first, then every blocking call. */
    static final class Site extends AdviceAdapter {
        final String cls, meth, desc;
        final boolean isStatic;
        final Map<Integer, Integer> seen = new LinkedHashMap<>();

        final List<Bridge> bridges;
        final boolean itf;

        /** `exception` points: record what this method's catch blocks catch ... */
        final boolean catches;
        /** ... and what escapes it (a point that names this method). */
        final boolean escapes;
        /** "pkg.Class.method", as records name it. */
        final String where;
        /** Handlers of typed catch blocks (a finally block's handler has no type: not these). */
        final java.util.Set<Label> handlers = new java.util.HashSet<>();
        /** A typed handler's label was just visited: record before its first instruction. */
        boolean atHandler;
        /** Where the body starts, for the catch-all that records escaping exceptions. */
        Label bodyStart;

        Site(MethodVisitor mv, int acc, String meth, String desc, String cls, List<Bridge> bridges, boolean itf) {
            super(Opcodes.ASM9, mv, acc, meth, desc);
            this.bridges = bridges;
            this.itf = itf;
            this.cls = cls;
            this.meth = meth;
            this.desc = desc;
            this.isStatic = (acc & Opcodes.ACC_STATIC) != 0;
            boolean c = false, e = false;
            for (Point p : Hook.points) {
                if (p.coversHandlers(cls, meth)) {
                    c = true;
                    e |= p.method != null;
                }
            }
            this.catches = c;
            this.escapes = e && !meth.equals("<clinit>");
            this.where = cls.replace('/', '.') + "." + meth;
        }

        @Override
        public void visitTryCatchBlock(Label start, Label end, Label handler, String type) {
            if (catches && type != null) {
                handlers.add(handler);
            }
            super.visitTryCatchBlock(start, end, handler, type);
        }

        @Override
        public void visitLabel(Label l) {
            super.visitLabel(l);
            if (handlers.contains(l)) {
                atHandler = true;
            }
        }

        /**
         * At a typed handler, before its first instruction (after its label, line number and
         * stack map frame, so no frame moves): Hook.caught(the exception, where), leaving the
         * exception on the stack as it was.
         */
        private void atInsn() {
            if (!atHandler) {
                return;
            }
            atHandler = false;
            mv.visitInsn(DUP);
            mv.visitLdcInsn(where);
            mv.visitMethodInsn(INVOKESTATIC, HOOK, "caught", "(Ljava/lang/Throwable;Ljava/lang/String;)V", false);
        }

        @Override
        public void visitInsn(int op) {
            atInsn();
            super.visitInsn(op);
        }

        @Override
        public void visitIntInsn(int op, int operand) {
            atInsn();
            super.visitIntInsn(op, operand);
        }

        @Override
        public void visitVarInsn(int op, int var) {
            atInsn();
            super.visitVarInsn(op, var);
        }

        @Override
        public void visitTypeInsn(int op, String type) {
            atInsn();
            super.visitTypeInsn(op, type);
        }

        @Override
        public void visitFieldInsn(int op, String owner, String name, String d) {
            atInsn();
            super.visitFieldInsn(op, owner, name, d);
        }

        @Override
        public void visitInvokeDynamicInsn(String name, String d, Handle bsm, Object... args) {
            atInsn();
            super.visitInvokeDynamicInsn(name, d, bsm, args);
        }

        @Override
        public void visitJumpInsn(int op, Label l) {
            atInsn();
            super.visitJumpInsn(op, l);
        }

        @Override
        public void visitLdcInsn(Object v) {
            atInsn();
            super.visitLdcInsn(v);
        }

        @Override
        public void visitIincInsn(int var, int inc) {
            atInsn();
            super.visitIincInsn(var, inc);
        }

        @Override
        public void visitTableSwitchInsn(int min, int max, Label dflt, Label... labels) {
            atInsn();
            super.visitTableSwitchInsn(min, max, dflt, labels);
        }

        @Override
        public void visitLookupSwitchInsn(Label dflt, int[] keys, Label[] labels) {
            atInsn();
            super.visitLookupSwitchInsn(dflt, keys, labels);
        }

        @Override
        public void visitMultiANewArrayInsn(String d, int dims) {
            atInsn();
            super.visitMultiANewArrayInsn(d, dims);
        }

        /**
         * A catch-all around the body (from after a constructor's super call) that records what
         * escapes and throws it on. Its handler comes last in the exception table, so every
         * handler of the method's own takes precedence; its frame is the method's arguments.
         */
        @Override
        public void visitMaxs(int maxStack, int maxLocals) {
            if (bodyStart != null) {
                Label end = new Label();
                Label handler = new Label();
                mv.visitLabel(end);
                mv.visitTryCatchBlock(bodyStart, end, handler, "java/lang/Throwable");
                mv.visitLabel(handler);
                List<Object> locals = new ArrayList<>();
                if (!isStatic) {
                    locals.add(cls);
                }
                for (Type t : Type.getArgumentTypes(desc)) {
                    locals.add(frameType(t));
                }
                mv.visitFrame(F_NEW, locals.size(), locals.toArray(), 1, new Object[] {"java/lang/Throwable"});
                mv.visitInsn(DUP);
                mv.visitLdcInsn(where);
                mv.visitMethodInsn(INVOKESTATIC, HOOK, "escaped", "(Ljava/lang/Throwable;Ljava/lang/String;)V", false);
                mv.visitInsn(ATHROW);
            }
            super.visitMaxs(maxStack, maxLocals);
        }

        private static Object frameType(Type t) {
            switch (t.getSort()) {
            case Type.BOOLEAN:
            case Type.BYTE:
            case Type.CHAR:
            case Type.SHORT:
            case Type.INT:
                return INTEGER;
            case Type.LONG:
                return LONG;
            case Type.FLOAT:
                return FLOAT;
            case Type.DOUBLE:
                return DOUBLE;
            default:
                return t.getInternalName();
            }
        }

        @Override
        protected void onMethodEnter() {
            if (escapes) {
                bodyStart = new Label();
                mv.visitLabel(bodyStart);
            }
            for (Point p : Hook.points) {
                if ((p.kind.equals("disk") || p.kind.equals("record") || p.kind.equals("timer")) && p.callOwner == null
                    && cls.equals(p.in) && meth.equals(p.method)) {
                    push(p.id);
                    if (isStatic) {
                        visitInsn(ACONST_NULL);
                    } else {
                        loadThis();
                    }
                    loadArgArray();
                    invokeStatic(Type.getObjectType(HOOK),
                        Method.getMethod("void entry(int, Object, Object[])"));
                }
            }
        }

        @Override
        protected void onMethodExit(int opcode) {
            if (opcode == ATHROW) {
                return;
            }
            for (Point p : Hook.points) {
                if (p.kind.equals("wake") && cls.equals(p.in) && meth.equals(p.method)) {
                    push(p.id);
                    if (isStatic) {
                        visitInsn(ACONST_NULL);
                    } else {
                        loadThis();
                    }
                    invokeStatic(Type.getObjectType(HOOK), Method.getMethod("void exit(int, Object)"));
                }
            }
            if (!meth.equals("<init>")) {
                return;
            }
            for (Point p : Hook.points) {
                if (p.kind.equals("capture") && cls.equals(p.in)) {
                    push(p.id);
                    loadThis();
                    invokeStatic(Type.getObjectType(HOOK), Method.getMethod("void capture(int, Object)"));
                }
            }
        }

        @Override
        public void visitMethodInsn(int op, String owner, String name, String desc, boolean itf) {
            atInsn();
            // The nth call of this method to the same owner.name(desc), counted once per site.
            int n = seen.merge((owner + "." + name + desc).hashCode(), 1, Integer::sum);
            for (Point p : Hook.points) {
                if (p.matchesCall(cls, meth, owner, name, desc) && (p.occurrence == 0 || p.occurrence == n)) {
                    rewriteToPoint(p, op, owner, desc);
                    return;
                }
            }
            if (generic(op, owner, name, desc)) {
                return;
            }
            super.visitMethodInsn(op, owner, name, desc, itf);
        }

        private void hook(String name, String desc) {
            super.visitMethodInsn(INVOKESTATIC, HOOK, name, desc, false);
        }

        private boolean generic(int op, String owner, String name, String desc) {
            if (op == INVOKESTATIC) {
                if (owner.equals("java/lang/Thread") && name.equals("sleep") && desc.equals("(J)V")) {
                    hook("sleep", "(J)V");
                    return true;
                }
                if (owner.equals("org/apache/zookeeper/common/Time") && name.equals("currentElapsedTime")
                    && desc.equals("()J") && clocked()) {
                    hook("clock", "()J");
                    return true;
                }
                return false;
            }
            if (QUEUES.contains(owner)) {
                String q = "Ljava/util/concurrent/BlockingQueue;";
                switch (name + desc) {
                case "take()Ljava/lang/Object;":
                    hook("qtake", "(" + q + ")Ljava/lang/Object;");
                    return true;
                case "poll(JLjava/util/concurrent/TimeUnit;)Ljava/lang/Object;":
                    hook("qpoll", "(" + q + "JLjava/util/concurrent/TimeUnit;)Ljava/lang/Object;");
                    return true;
                case "offer(Ljava/lang/Object;)Z":
                    hook("qoffer", "(" + q + "Ljava/lang/Object;)Z");
                    return true;
                case "add(Ljava/lang/Object;)Z":
                    hook("qadd", "(" + q + "Ljava/lang/Object;)Z");
                    return true;
                case "put(Ljava/lang/Object;)V":
                    hook("qput", "(" + q + "Ljava/lang/Object;)V");
                    return true;
                default:
                    return false;
                }
            }
            if (owner.equals("java/util/concurrent/CountDownLatch") && name.equals("await")) {
                if (desc.equals("()V")) {
                    hook("lawait", "(Ljava/util/concurrent/CountDownLatch;)V");
                    return true;
                }
                if (desc.equals("(JLjava/util/concurrent/TimeUnit;)Z")) {
                    hook("lawait", "(Ljava/util/concurrent/CountDownLatch;JLjava/util/concurrent/TimeUnit;)Z");
                    return true;
                }
            }
            if (op == INVOKEVIRTUAL && owner.equals("java/nio/channels/Selector")
                && (desc.equals("()I") || desc.equals("(J)I")) && name.equals("select")) {
                hook("nselect", "(Ljava/nio/channels/Selector;" + desc.substring(1));
                return true;
            }
            if (op == INVOKEVIRTUAL && owner.equals("java/nio/channels/Selector") && name.equals("wakeup")
                && desc.equals("()Ljava/nio/channels/Selector;")) {
                hook("nwakeup", "(Ljava/nio/channels/Selector;)Ljava/nio/channels/Selector;");
                return true;
            }
            if (name.equals("awaitTermination") && desc.equals("(JLjava/util/concurrent/TimeUnit;)Z")
                && EXECUTORS.contains(owner)) {
                hook("xawait", "(Ljava/util/concurrent/ExecutorService;JLjava/util/concurrent/TimeUnit;)Z");
                return true;
            }
            if (op == INVOKEVIRTUAL && owner.equals("java/net/ServerSocket") && name.equals("accept")
                && desc.equals("()Ljava/net/Socket;")) {
                hook("naccept", "(Ljava/net/ServerSocket;)Ljava/net/Socket;");
                return true;
            }
            if (op == INVOKEVIRTUAL) {
                switch (name + desc) {
                case "wait()V":
                    hook("owait", "(Ljava/lang/Object;)V");
                    return true;
                case "wait(J)V":
                    hook("owait", "(Ljava/lang/Object;J)V");
                    return true;
                case "join()V":
                    hook("tjoin", "(Ljava/lang/Object;)V");
                    return true;
                case "join(J)V":
                    hook("tjoin", "(Ljava/lang/Object;J)V");
                    return true;
                case "notify()V":
                    hook("onotify", "(Ljava/lang/Object;)V");
                    return true;
                case "notifyAll()V":
                    hook("onotifyAll", "(Ljava/lang/Object;)V");
                    return true;
                default:
                    return false;
                }
            }
            return false;
        }

        private boolean clocked() {
            Object c = Hook.config.get("clock");
            if (c instanceof List) {
                for (Object o : (List<?>) c) {
                    if (cls.startsWith(Point.slash(o.toString()))) {
                        return true;
                    }
                }
            }
            return false;
        }

        /**
         * Replace the call by a call of a bridge method generated into this class, which takes
         * the same stack (receiver, arguments) plus this, and calls Hook.point. A bridge keeps the
         * rewritten method free of new locals, so its stack map frames stay valid.
         */
        private void rewriteToPoint(Point p, int op, String owner, String desc) {
            Type[] args = Type.getArgumentTypes(desc);
            Type ret = Type.getReturnType(desc);
            StringBuilder bd = new StringBuilder("(");
            if (op != INVOKESTATIC) {
                bd.append(Type.getObjectType(owner).getDescriptor());
            }
            for (Type a : args) {
                bd.append(a.getDescriptor());
            }
            bd.append("Ljava/lang/Object;)").append(ret.getDescriptor());
            if (isStatic || meth.equals("<init>")) {
                visitInsn(ACONST_NULL);
            } else {
                loadThis();
            }
            String name = "flymc$point$" + bridges.size();
            bridges.add(new Bridge(name, bd.toString(), p.id, op != INVOKESTATIC, args, ret));
            super.visitMethodInsn(INVOKESTATIC, cls, name, bd.toString(), itf);
        }
    }
}
