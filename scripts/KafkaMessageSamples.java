// Writes Kafka's own encodings of every broker API's request and response, at every version, for
// the round-trip check of Shoal's generated codecs (protocol/tests/kafka_samples.rs).
//
// Each message is a Java client message class (the classes the Java client encodes with) filled
// with seeded random values: every field set, every array with one or two elements, every nested
// struct filled. A version that cannot carry a field refuses to write it
// (UnsupportedVersionException names the field); that field is put back to its default and the
// write tried again, so each sample holds every field its version has.
//
// Run by scripts/gen_kafka_messages.py: java -cp kafka-clients.jar KafkaMessageSamples.java OUT
// Output: records of api_key i16, kind i8 (0 request, 1 response), version i16, length i32, bytes.

import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.utils.internals.ImplicitLinkedHashCollection;
import org.apache.kafka.common.record.internal.MemoryRecords;

public class KafkaMessageSamples {
    private static final Pattern NON_DEFAULT =
        Pattern.compile("non-default (\\w+) at version");

    public static void main(String[] args) throws Exception {
        int written = 0;
        try (DataOutputStream out = new DataOutputStream(new FileOutputStream(args[0]))) {
            for (ApiMessageType api : ApiMessageType.values()) {
                if (!api.listeners().contains(ApiMessageType.ListenerType.BROKER)) {
                    continue;
                }
                for (short v = api.lowestSupportedVersion(); v <= api.highestSupportedVersion(true); v++) {
                    for (int kind = 0; kind < 2; kind++) {
                        Random rng = new Random(api.apiKey() * 1_000_003L + v * 31L + kind);
                        ApiMessage message = kind == 0 ? api.newRequest() : api.newResponse();
                        fill(message, rng, 0);
                        byte[] bytes = writeDroppingWhatTheVersionLacks(message, v);
                        out.writeShort(api.apiKey());
                        out.writeByte(kind);
                        out.writeShort(v);
                        out.writeInt(bytes.length);
                        out.write(bytes);
                        written++;
                    }
                }
            }
        }
        System.out.println("wrote " + written + " samples to " + args[0]);
    }

    private static byte[] writeDroppingWhatTheVersionLacks(Message message, short version) throws Exception {
        for (int attempt = 0; attempt < 500; attempt++) {
            try {
                ByteBuffer buf = MessageUtil.toByteBufferAccessor(message, version).buffer();
                byte[] bytes = new byte[buf.remaining()];
                buf.get(bytes);
                return bytes;
            } catch (UnsupportedVersionException e) {
                Matcher m = NON_DEFAULT.matcher(String.valueOf(e.getMessage()));
                if (System.getenv("SAMPLES_DEBUG") != null) System.err.println(message.getClass().getSimpleName() + " v" + version + ": " + e.getMessage());
                if (!m.find() || !reset(message, m.group(1), 0)) {
                    throw new IllegalStateException(message.getClass().getSimpleName() + " v" + version, e);
                }
            }
        }
        throw new IllegalStateException("too many fields to reset in " + message.getClass().getSimpleName());
    }

    private static List<Field> dataFields(Class<?> c) {
        List<Field> fields = new ArrayList<>();
        for (Field f : c.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) || f.getName().startsWith("_")) {
                continue;
            }
            // A keyed collection's element links itself into the collection through these.
            boolean linked = ImplicitLinkedHashCollection.Element.class.isAssignableFrom(c);
            if (linked && (f.getName().equals("next") || f.getName().equals("prev"))) {
                continue;
            }
            f.setAccessible(true);
            fields.add(f);
        }
        return fields;
    }

    private static boolean isMessage(Class<?> c) {
        return Message.class.isAssignableFrom(c);
    }

    /** Puts every field named `name` anywhere in the tree back to its default. */
    private static boolean reset(Object message, String name, int depth) throws Exception {
        if (depth > 16) {
            return false;
        }
        boolean any = false;
        Object fresh = message.getClass().getDeclaredConstructor().newInstance();
        for (Field f : dataFields(message.getClass())) {
            Object value = f.get(message);
            if (f.getName().equals(name) && !java.util.Objects.equals(value, f.get(fresh))) {
                f.set(message, f.get(fresh));
                any = true;
            } else if (value instanceof Collection<?> items) {
                for (Object item : items) {
                    if (item != null && isMessage(item.getClass())) {
                        any |= reset(item, name, depth + 1);
                    }
                }
            } else if (value != null && isMessage(value.getClass())) {
                any |= reset(value, name, depth + 1);
            }
        }
        return any;
    }

    private static void fill(Object message, Random rng, int depth) throws Exception {
        for (Field f : dataFields(message.getClass())) {
            Object value = valueOf(f.getType(), f.getGenericType(), rng, depth);
            if (value != null) {
                f.set(message, value);
            }
        }
    }

    private static String text(Random rng) {
        StringBuilder s = new StringBuilder();
        int n = 1 + rng.nextInt(6);
        for (int i = 0; i < n; i++) {
            s.append((char) ('a' + rng.nextInt(26)));
        }
        return s.toString();
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object valueOf(Class<?> type, Type generic, Random rng, int depth) throws Exception {
        if (type == Integer.class) return valueOf(int.class, int.class, rng, depth);
        if (type == Long.class) return valueOf(long.class, long.class, rng, depth);
        if (type == Short.class) return valueOf(short.class, short.class, rng, depth);
        if (type == Byte.class) return valueOf(byte.class, byte.class, rng, depth);
        if (type == int.class) return rng.nextInt(100_000) + 1;
        if (type == short.class) return (short) (rng.nextInt(1000) + 1);
        if (type == long.class) return rng.nextLong() >>> 1;
        if (type == byte.class) return (byte) (rng.nextInt(100) + 1);
        if (type == boolean.class) return true;
        if (type == double.class) return rng.nextDouble() + 1;
        if (type == String.class) return text(rng);
        if (type == Uuid.class) return new Uuid(rng.nextLong(), rng.nextLong());
        if (type == byte[].class) {
            byte[] b = new byte[1 + rng.nextInt(8)];
            rng.nextBytes(b);
            return b;
        }
        if (type == ByteBuffer.class) {
            byte[] b = new byte[1 + rng.nextInt(8)];
            rng.nextBytes(b);
            return ByteBuffer.wrap(b);
        }
        if (BaseRecords.class.isAssignableFrom(type)) {
            byte[] b = new byte[1 + rng.nextInt(32)];
            rng.nextBytes(b);
            return MemoryRecords.readableRecords(ByteBuffer.wrap(b));
        }
        if (depth > 8) {
            return null;
        }
        if (Collection.class.isAssignableFrom(type)) {
            Type elementType = elementType(type, generic);
            Class<?> element = elementType instanceof Class<?> c ? c : (Class<?>) ((ParameterizedType) elementType).getRawType();
            Collection items = type.isInterface() ? new ArrayList<>() : (Collection) type.getDeclaredConstructor().newInstance();
            int n = 1 + rng.nextInt(2);
            for (int i = 0; i < n; i++) {
                Object item = valueOf(element, elementType, rng, depth + 1);
                if (item != null) {
                    items.add(item);
                }
            }
            return items;
        }
        if (isMessage(type)) {
            Object nested = type.getDeclaredConstructor().newInstance();
            fill(nested, rng, depth + 1);
            return nested;
        }
        throw new IllegalStateException("no sample value for " + type);
    }

    /** The element type of a List<X> field, or of a generated XCollection class. */
    private static Type elementType(Class<?> type, Type generic) {
        if (generic instanceof ParameterizedType p) {
            return p.getActualTypeArguments()[0];
        }
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            if (c.getGenericSuperclass() instanceof ParameterizedType p) {
                return p.getActualTypeArguments()[0];
            }
        }
        throw new IllegalStateException("no element type for " + type);
    }
}
