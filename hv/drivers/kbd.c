/*
 * kbd.c - the PS/2 keyboard: the machine's i8042 controller on IRQ 1.
 *
 * The keyboard is the hypervisor's, like COM1: what is typed in the VGA
 * window becomes console input, the same bytes a terminal on COM1 would
 * send (hv/drivers/kbd_scancode.c does the translation), and goes where serial
 * input goes: the Ctrl-] commands, else the guest's virtual UART (vcpu.c).
 * The guest never reaches this controller (vcpu_io.c shows it none).
 *
 * Setting up: the firmware (BIOS, GRUB) leaves the keyboard scanning with
 * its defaults; we only set up the controller, so that it hands us scancode
 * set 1 (translation on) with IRQ 1, and keeps the mouse port shut.
 * A machine without a controller (its ports float to 0xff), or whose
 * controller fails its self-test or its keyboard-port test, has no keyboard
 * for us: said once, and the serial console is the only input.
 *
 * Every wait on the controller is bounded: a controller that stops
 * answering must not hang the hypervisor's start.
 */
#include "kbd.h"
#include "kbd_scancode.h"
#include "io.h"
#include "pic.h"
#include "segments.h"
#include "tsc.h"

#define I8042_DATA     0x60
#define I8042_STATUS   0x64	/* read */
#define I8042_COMMAND  0x64	/* write */

#define STATUS_OUTPUT_FULL  0x01	/* a byte waits at I8042_DATA for us */
#define STATUS_INPUT_FULL   0x02	/* the controller has not taken our last byte */
#define STATUS_FROM_MOUSE   0x20	/* that byte came from the aux port */

#define CMD_READ_CONFIG     0x20
#define CMD_WRITE_CONFIG    0x60
#define CMD_DISABLE_MOUSE   0xa7
#define CMD_SELF_TEST       0xaa	/* answers 0x55 */
#define CMD_TEST_KBD_PORT   0xab	/* answers 0x00 */
#define CMD_DISABLE_KBD     0xad
#define CMD_ENABLE_KBD      0xae

#define SELF_TEST_OK        0x55
#define PORT_TEST_OK        0x00

#define CONFIG_KBD_IRQ      0x01
#define CONFIG_MOUSE_IRQ    0x02
#define CONFIG_KBD_OFF      0x10
#define CONFIG_MOUSE_OFF    0x20
#define CONFIG_TRANSLATE    0x40	/* keyboard's set 2 -> set 1 */

#define WAIT_MS 100		/* far longer than any controller takes */

static struct kbd_state keys;
static uint8_t typed[256];
static volatile unsigned typed_head, typed_tail;

/* Wait until (status & mask) == want; false on timeout. */
static bool wait_status(uint8_t mask, uint8_t want)
{
	uint64_t start = rdtsc(), limit = tsc_hz() / 1000 * WAIT_MS;

	while ((inb(I8042_STATUS) & mask) != want)
		if (rdtsc() - start > limit)
			return false;
		else
			cpu_relax();
	return true;
}

static bool command(uint8_t cmd)
{
	if (!wait_status(STATUS_INPUT_FULL, 0))
		return false;
	outb(I8042_COMMAND, cmd);
	return true;
}

static bool write_data(uint8_t byte)
{
	if (!wait_status(STATUS_INPUT_FULL, 0))
		return false;
	outb(I8042_DATA, byte);
	return true;
}

/* The controller's answer to a command; -1 if none came. */
static int read_answer(void)
{
	if (!wait_status(STATUS_OUTPUT_FULL, STATUS_OUTPUT_FULL))
		return -1;
	return inb(I8042_DATA);
}

/* Drop whatever the keyboard sent before we were ready (keys pressed
 * while GRUB handed over).  Bounded: a broken controller may say "full"
 * forever. */
static void flush_output(void)
{
	for (int i = 0; i < 32 && (inb(I8042_STATUS) & STATUS_OUTPUT_FULL); i++)
		(void)inb(I8042_DATA);
}

/* IRQ 1: every byte waiting, through the translator into the ring; what
 * does not fit is dropped (as serial.c drops). */
void kbd_irq(void)
{
	for (int i = 0; i < 16; i++) {
		uint8_t status = inb(I8042_STATUS), code, out[KBD_MAX_BYTES];
		unsigned n;

		if (!(status & STATUS_OUTPUT_FULL))
			break;
		code = inb(I8042_DATA);
		if (status & STATUS_FROM_MOUSE)
			continue;	/* the port is off; a stray byte all the same */
		n = kbd_scancode(&keys, code, out);
		for (unsigned j = 0; j < n; j++) {
			unsigned next = (typed_head + 1) % sizeof(typed);

			if (next == typed_tail)
				break;
			typed[typed_head] = out[j];
			typed_head = next;
		}
	}
}

int kbd_getc(void)
{
	uint8_t c;

	if (typed_tail == typed_head)
		return -1;
	c = typed[typed_tail];
	typed_tail = (typed_tail + 1) % sizeof(typed);
	return c;
}

/* Not an error: the caller says it once, and the serial console goes on alone. */
static bool no_keyboard(struct kbd_probe *p, const char *why, int answer)
{
	p->why = why;
	p->answer = answer;
	return false;
}

bool kbd_init(struct kbd_probe *p)
{
	int answer = -1, config = -1;

	kbd_state_init(&keys);
	/* An ISA port with nothing behind it reads all ones. */
	if (inb(I8042_STATUS) == 0xff)
		return no_keyboard(p, "no controller: its status port 0x64 reads 0xff", -1);
	/* Quiet both ports while we set up, so that no key press lands in
	 * the place of an answer. */
	if (!command(CMD_DISABLE_KBD) || !command(CMD_DISABLE_MOUSE))
		return no_keyboard(p, "the controller takes no commands", -1);
	flush_output();

	if (command(CMD_SELF_TEST))
		answer = read_answer();
	if (answer != SELF_TEST_OK)
		return no_keyboard(p, answer < 0 ? "controller self-test: no answer" :
				   "controller self-test failed", answer);
	/* Read the configuration after the self-test: on some controllers
	 * the test resets it. */
	if (command(CMD_READ_CONFIG))
		config = read_answer();
	if (config < 0)
		return no_keyboard(p, "cannot read the controller's configuration", -1);
	config |= CONFIG_KBD_IRQ | CONFIG_TRANSLATE | CONFIG_MOUSE_OFF;
	config &= ~(CONFIG_MOUSE_IRQ | CONFIG_KBD_OFF);
	if (!command(CMD_WRITE_CONFIG) || !write_data((uint8_t)config))
		return no_keyboard(p, "cannot write the controller's configuration", -1);
	answer = -1;
	if (command(CMD_TEST_KBD_PORT))
		answer = read_answer();
	if (answer != PORT_TEST_OK)
		return no_keyboard(p, answer < 0 ? "keyboard port test: no answer" :
				   "keyboard port test failed", answer);

	flush_output();
	if (!command(CMD_ENABLE_KBD))
		return no_keyboard(p, "the controller takes no commands", -1);
	pic_unmask(HV_IRQ_KEYBOARD);
	return true;
}
