package dev.phrony.worker.plugin;

import dev.phrony.worker.isolation.PluginClassLoader;
import dev.phrony.worker.isolation.PluginExits;
import dev.phrony.worker.isolation.PluginHooks;
import java.nio.charset.StandardCharsets;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends a plugin's {@code Runtime.halt}, {@code Runtime.exit} and {@code System.exit} calls to
 * {@link PluginExits}, and its {@code Runtime.addShutdownHook}/{@code removeShutdownHook} calls to
 * {@link PluginHooks} (so that unloading it can remove its hooks), as its classes load. {@code
 * halt} runs no shutdown hook, so a plugin's {@code Runtime.getRuntime().halt(0)} would otherwise
 * end the worker with status 0 and no word: a supervisor with {@code Restart=on-failure} would
 * leave it down. Calls made by reflection or method handle are not seen here ({@code System.exit}
 * is still caught by the exit guard's hook).
 *
 * <p>Each call becomes an {@code invokestatic} with the same operands on the stack (the receiver
 * becomes the first argument), so the stack map frames stay valid and nothing is recomputed.
 */
final class ExitCallRewriter implements PluginClassLoader.ClassRewriter {
  private static final Logger log = LoggerFactory.getLogger(ExitCallRewriter.class);

  static final ExitCallRewriter INSTANCE = new ExitCallRewriter();

  private static final String RUNTIME = "java/lang/Runtime";
  private static final String SYSTEM = "java/lang/System";
  private static final String EXITS = PluginExits.class.getName().replace('.', '/');
  private static final String HOOKS = PluginHooks.class.getName().replace('.', '/');
  private static final byte[][] NEEDLES = {
    "halt".getBytes(StandardCharsets.US_ASCII),
    "exit".getBytes(StandardCharsets.US_ASCII),
    "ShutdownHook".getBytes(StandardCharsets.US_ASCII)
  };

  private ExitCallRewriter() {}

  @Override
  public byte[] rewrite(String className, byte[] classFile) {
    if (!mayCallExit(classFile)) {
      return classFile; // most classes: no parse at all
    }
    try {
      ClassReader reader = new ClassReader(classFile);
      ClassWriter writer = new ClassWriter(reader, 0);
      boolean[] changed = {false};
      reader.accept(
          new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(
                int access, String name, String desc, String signature, String[] exceptions) {
              return new MethodVisitor(
                  Opcodes.ASM9, super.visitMethod(access, name, desc, signature, exceptions)) {
                @Override
                public void visitMethodInsn(
                    int opcode, String owner, String method, String mdesc, boolean itf) {
                  if (isHookCall(opcode, owner, method, mdesc)) {
                    changed[0] = true;
                    super.visitMethodInsn(
                        Opcodes.INVOKESTATIC,
                        HOOKS,
                        method,
                        "(L" + RUNTIME + ";" + mdesc.substring(1),
                        false);
                    return;
                  }
                  String target = target(opcode, owner, method, mdesc);
                  if (target == null) {
                    super.visitMethodInsn(opcode, owner, method, mdesc, itf);
                    return;
                  }
                  changed[0] = true;
                  super.visitMethodInsn(
                      Opcodes.INVOKESTATIC,
                      EXITS,
                      target,
                      opcode == Opcodes.INVOKESTATIC ? "(I)V" : "(L" + RUNTIME + ";I)V",
                      false);
                }
              };
            }
          },
          0);
      return changed[0] ? writer.toByteArray() : classFile;
    } catch (RuntimeException e) {
      // A class file newer than this ASM reads: defined as it is, its exits only caught by the
      // hook.
      log.warn(
          "class {} could not be checked for Runtime.halt/exit calls ({}): loaded unchanged",
          className,
          e.toString());
      return classFile;
    }
  }

  /** {@code Runtime.addShutdownHook(Thread)} or {@code removeShutdownHook(Thread)}. */
  private static boolean isHookCall(int opcode, String owner, String name, String desc) {
    return opcode == Opcodes.INVOKEVIRTUAL
        && owner.equals(RUNTIME)
        && ((name.equals("addShutdownHook") && desc.equals("(Ljava/lang/Thread;)V"))
            || (name.equals("removeShutdownHook") && desc.equals("(Ljava/lang/Thread;)Z")));
  }

  /** The {@link PluginExits} method that stands for this call, or null to leave it alone. */
  private static String target(int opcode, String owner, String name, String desc) {
    if (!desc.equals("(I)V")) {
      return null;
    }
    if (opcode == Opcodes.INVOKEVIRTUAL
        && owner.equals(RUNTIME)
        && (name.equals("halt") || name.equals("exit"))) {
      return name;
    }
    if (opcode == Opcodes.INVOKESTATIC && owner.equals(SYSTEM) && name.equals("exit")) {
      return "exit";
    }
    return null;
  }

  /** A cheap look at the constant pool's text: none of the names means no such call. */
  static boolean mayCallExit(byte[] classFile) {
    for (byte[] needle : NEEDLES) {
      if (indexOf(classFile, needle) >= 0) {
        return true;
      }
    }
    return false;
  }

  private static int indexOf(byte[] hay, byte[] needle) {
    outer:
    for (int i = 0; i <= hay.length - needle.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (hay[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
