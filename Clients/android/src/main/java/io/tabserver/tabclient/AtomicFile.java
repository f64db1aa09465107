package io.tabserver.tabclient;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.util.UUID;

/**
 * Whole-file reads and crash-safe replacement with {@code java.io} only ({@code java.nio.file} is Android API 26): a
 * write goes to {@code .<name>.tmp-<uuid>} in the same directory, is flushed to the device ({@code fsync}), and is
 * renamed over the file, so a kill at any point leaves the previous copy or the new one, never a mix.
 */
final class AtomicFile {
    private AtomicFile() {}

    /** The file's bytes, or null when there is no such file. */
    static byte[] read(File file) throws IOException {
        if (!file.isFile()) return null;
        FileInputStream input = new FileInputStream(file);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try {
            byte[] chunk = new byte[16384];
            for (int n; (n = input.read(chunk)) > 0;) {
                bytes.write(chunk, 0, n);
                if (bytes.size() > Http.MAXIMUM_BODY + 65536) throw new IOException(file + " is too large");
            }
        } finally {
            input.close();
        }
        return bytes.toByteArray();
    }

    /** Replaces {@code file} with {@code parts}, atomically. */
    static void write(File file, byte[]... parts) throws IOException {
        File directory = file.getAbsoluteFile().getParentFile();
        if (!directory.isDirectory() && !directory.mkdirs() && !directory.isDirectory()) {
            throw new IOException("cannot make the directory " + directory);
        }
        File temporary = new File(directory, "." + file.getName() + ".tmp-" + UUID.randomUUID());
        boolean renamed = false;
        try {
            FileOutputStream output = new FileOutputStream(temporary);
            try {
                for (byte[] part : parts) output.write(part);
                output.flush();
                output.getFD().sync();
            } finally {
                output.close();
            }
            if (!temporary.renameTo(file)) throw new IOException("cannot rename " + temporary.getName() + " to " + file.getName());
            renamed = true;
        } finally {
            if (!renamed) temporary.delete();
        }
    }

    /** Removes the temporary files a kill left behind beside {@code file} (they are never read). */
    static void removeLeftovers(File file) {
        File directory = file.getAbsoluteFile().getParentFile();
        String[] names = directory.list();
        if (names == null) return;
        String prefix = "." + file.getName() + ".tmp-";
        for (String name : names) {
            if (name.startsWith(prefix)) new File(directory, name).delete();
        }
    }
}
