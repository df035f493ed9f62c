package org.flymc.hook;

import java.io.FileDescriptor;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.ServerSocket;
import java.util.Map;
import java.util.Set;

/**
 * Whether the kernel holds a connection a listening socket has not accepted yet.
 *
 * <p>A thread blocked in {@code accept} waits for the network, so the hook counts it as resting
 * without asking its state. But a peer's {@code connect} returns once the kernel has queued the
 * connection, before the accepting thread runs: a node checked in between looked quiet, then
 * accepted and reported its new connection's events after it had said done. With this the hook
 * waits for a connection inside its rest and leaves the rest before taking it, so a queued
 * connection is always either in the backlog (seen here) or taken by a thread that is busy.
 */
final class Backlog {
    private Backlog() {}

    private static Field impl;
    private static Method fileDescriptor;
    // NioSocketImpl's own bracket around an accept: it names the waiting thread, so a close
    // from another thread signals it out of its poll (a plain close does not wake a poll).
    private static Method beginAccept;
    private static Method endAccept;
    private static Method poll;
    private static short pollin;

    /**
     * Opens what it reads in java.base to the hook (without an agent, `--add-opens` must have);
     * when that fails, accepts rest as before.
     */
    static void init(Instrumentation inst) {
        try {
            if (inst != null) {
                Module hook = Backlog.class.getModule();
                inst.redefineModule(Object.class.getModule(), Set.of(), Map.of(),
                    Map.of("java.net", Set.of(hook), "sun.nio.ch", Set.of(hook)), Set.of(), Map.of());
            }
            impl = ServerSocket.class.getDeclaredField("impl");
            impl.setAccessible(true);
            fileDescriptor = java.net.SocketImpl.class.getDeclaredMethod("getFileDescriptor");
            fileDescriptor.setAccessible(true);
            Class<?> nio = Class.forName("sun.nio.ch.NioSocketImpl");
            beginAccept = nio.getDeclaredMethod("beginAccept");
            beginAccept.setAccessible(true);
            endAccept = nio.getDeclaredMethod("endAccept", boolean.class);
            endAccept.setAccessible(true);
            Class<?> net = Class.forName("sun.nio.ch.Net");
            poll = net.getDeclaredMethod("poll", FileDescriptor.class, int.class, long.class);
            poll.setAccessible(true);
            Field in = net.getDeclaredField("POLLIN");
            in.setAccessible(true);
            pollin = in.getShort(null);
        } catch (Throwable e) {
            Hook.log("accepts rest without a backlog check: " + e);
            poll = null;
        }
    }

    /** The descriptor of {@link #impl}'s socket, or null when it cannot be read (then accept as before). */
    static FileDescriptor fd(Object impl) {
        try {
            return (FileDescriptor) fileDescriptor.invoke(impl);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** The JDK's socket behind {@code s} when it is the platform's (NioSocketImpl), else null. */
    static Object impl(ServerSocket s) {
        if (poll == null || s.getClass() != ServerSocket.class) {
            return null;
        }
        try {
            Object i = impl.get(s);
            return i != null && i.getClass() == beginAccept.getDeclaringClass() ? i : null;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /**
     * Waits until a connection is queued on {@code s} or {@code s} is closed, as the calling
     * thread's accept would (a close signals it), without taking the connection.
     */
    static void awaitConnection(ServerSocket s, Object i, FileDescriptor fd) throws java.io.IOException {
        call(beginAccept, i); // closed or not bound: the same exception accept throws
        try {
            // 0: a signal (the close's, or another) woke the poll: look again.
            while (!s.isClosed() && !await(fd, -1)) {
                Thread.onSpinWait();
            }
        } finally {
            // Finishes a close that came meanwhile (the last thread in closes the fd).
            call(endAccept, i, true);
        }
    }

    /** {@code m} on {@code recv}, throwing what it throws (an I/O error as itself). */
    private static Object call(Method m, Object recv, Object... args) throws java.io.IOException {
        try {
            return m.invoke(recv, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable c = e.getCause();
            if (c instanceof java.io.IOException) {
                throw (java.io.IOException) c;
            }
            if (c instanceof RuntimeException) {
                throw (RuntimeException) c;
            }
            throw new IllegalStateException(c);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Whether a connection waits now (an error counts: the waiting thread wakes to it). */
    static boolean queued(FileDescriptor fd) {
        try {
            return await(fd, 0);
        } catch (java.io.IOException | RuntimeException e) {
            return true;
        }
    }

    /** Waits up to {@code ms} for a connection to wait in the backlog; true once one does. */
    static boolean await(FileDescriptor fd, long ms) throws java.io.IOException {
        return (int) call(poll, null, fd, (int) pollin, ms) > 0;
    }
}
