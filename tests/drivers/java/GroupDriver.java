import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;

/**
 * Java client (kafka-clients 4.3, classic group protocol) group scenarios, all members as threads of one JVM.
 *
 * Usage: GroupDriver (group3|static|hold|scale) BOOTSTRAP TOPIC GROUP [MEMBERS]. `-Dpartition.assignment.strategy=CLASS`
 * sets the members' assignor (e.g. org.apache.kafka.clients.consumer.CooperativeStickyAssignor). Events go to stdout as JSON lines; at each
 * `phase` event the driver waits for a line on stdin while the test checks the server side.
 */
public final class GroupDriver {
    private GroupDriver() {}

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        String bootstrap = args[1];
        String topic = args[2];
        String group = args[3];
        switch (scenario) {
            case "group3" -> groupOfThree(bootstrap, topic, group);
            case "static" -> staticRestart(bootstrap, topic, group);
            case "hold" -> hold(bootstrap, topic, group, Integer.parseInt(args[4]));
            case "scale" -> scale(bootstrap, topic, group);
            default -> throw new IllegalArgumentException(scenario);
        }
        Out.emit("done");
        System.exit(0);
    }

    /** Three members join, consume and commit everything; one leaves; the other two take over and consume on. */
    static void groupOfThree(String bootstrap, String topic, String group) throws Exception {
        int partitions = 6;
        try (Admin admin = Common.admin(bootstrap)) {
            Common.createTopic(admin, topic, partitions);
        }
        Common.produce(bootstrap, topic, partitions, 0, 60);
        Map<String, String> seen = Member.sharedSeen();
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            members.add(new Member(bootstrap, group, topic, "java-" + i, null, 6000, seen));
        }
        Common.await("consume the first 60 records", 60, members, () -> seen.size() == 60);
        Common.await("three members settle", 30, members, () -> Common.settled(members, partitions, 0));
        int generation = members.get(0).generation;
        Out.phase("consumed", "records", seen.size(), "generation", generation, "members", Common.describe(members));

        Member leaving = members.remove(0);
        leaving.close();
        Common.await("the two others take over", 30, members, () -> Common.settled(members, partitions, generation));
        Common.produce(bootstrap, topic, partitions, 60, 30);
        Common.await("consume the next 30 records", 30, members, () -> seen.size() == 90);
        Out.phase("after_leave", "records", seen.size(), "generation", members.get(0).generation, "left", leaving.describe(),
                "members", Common.describe(members));
        for (Member m : members) {
            m.close();
        }
    }

    /** Three static members; one closes (no LeaveGroup) and a new consumer with its instance id takes its place. */
    static void staticRestart(String bootstrap, String topic, String group) throws Exception {
        int partitions = 4;
        try (Admin admin = Common.admin(bootstrap)) {
            Common.createTopic(admin, topic, partitions);
        }
        Common.produce(bootstrap, topic, partitions, 0, 20);
        Map<String, String> seen = Member.sharedSeen();
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            members.add(new Member(bootstrap, group, topic, "java-s" + i, "inst-" + i, 10000, seen));
        }
        Common.await("consume the first 20 records", 60, members, () -> seen.size() == 20);
        Common.await("three static members settle", 30, members, () -> Common.settled(members, partitions, 0));
        int generation = members.get(0).generation;
        Out.phase("stable", "generation", generation, "members", Common.describe(members));

        Member old = members.get(1);
        old.close();
        Member restarted = new Member(bootstrap, group, topic, "java-s1-restarted", "inst-1", 10000, seen);
        members.set(1, restarted);
        Common.await("the restarted member gets its partitions back", 30, members,
                () -> restarted.partitions.equals(old.partitions) && restarted.generation > 0);
        Common.produce(bootstrap, topic, partitions, 20, 20);
        Common.await("consume the next 20 records", 30, members, () -> seen.size() == 40);
        Out.phase("restarted", "generation", generation, "old", old.describe(), "members", Common.describe(members),
                "restarted_values", restarted.valuesSnapshot());
        for (Member m : members) {
            m.close();
        }
    }

    /** One member, then three, then two (one leaves); every record consumed once at each size. */
    static void scale(String bootstrap, String topic, String group) throws Exception {
        int partitions = 6;
        try (Admin admin = Common.admin(bootstrap)) {
            Common.createTopic(admin, topic, partitions);
        }
        Common.produce(bootstrap, topic, partitions, 0, 30);
        Map<String, String> seen = Member.sharedSeen();
        List<Member> members = new ArrayList<>();
        members.add(new Member(bootstrap, group, topic, "java-c0", null, 45000, seen));
        Common.await("one member consumes the first 30 records", 60, members, () -> seen.size() == 30);
        Common.await("one member settles", 30, members, () -> Common.settled(members, partitions, 0));
        Out.phase("one", "records", seen.size(), "generation", members.get(0).generation, "members", Common.describe(members));

        int before = members.get(0).generation;
        members.add(new Member(bootstrap, group, topic, "java-c1", null, 45000, seen));
        members.add(new Member(bootstrap, group, topic, "java-c2", null, 45000, seen));
        Common.await("three members settle", 60, members, () -> Common.settled(members, partitions, before));
        Common.produce(bootstrap, topic, partitions, 30, 30);
        Common.await("consume the next 30 records", 30, members, () -> seen.size() == 60);
        Out.phase("three", "records", seen.size(), "generation", members.get(0).generation, "members", Common.describe(members));

        int three = members.get(0).generation;
        Member leaving = members.remove(0);
        leaving.close();
        Common.await("two members settle", 60, members, () -> Common.settled(members, partitions, three));
        Common.produce(bootstrap, topic, partitions, 60, 30);
        Common.await("consume the last 30 records", 30, members, () -> seen.size() == 90);
        Out.phase("two", "records", seen.size(), "generation", members.get(0).generation, "left", leaving.describe(),
                "members", Common.describe(members), "consumed_total", members.stream().mapToInt(Member::consumed).sum() + leaving.consumed());
        for (Member m : members) {
            m.close();
        }
    }

    /** MEMBERS members join an existing topic's group and consume until the test lets the `running` phase end. */
    static void hold(String bootstrap, String topic, String group, int count) throws Exception {
        Map<String, String> seen = Member.sharedSeen();
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            members.add(new Member(bootstrap, group, topic, "java-h" + i, null, 10000, seen));
        }
        Out.phase("running", "members", count);
        Out.phase("stopping", "members", Common.describe(members));
        for (Member m : members) {
            m.close();
        }
    }
}
