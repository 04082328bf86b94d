/*
 * rtc.c - the wall clock: the CMOS RTC, read once at boot, then advanced
 * by the TSC (VMI GetWallclockTime: nanoseconds since 1970-01-01 UTC).
 * The RTC is assumed to keep UTC, as QEMU's does by default.
 */
#include "timer.h"
#include "io.h"
#include "log.h"

static uint64_t boot_secs, boot_tsc;

static uint8_t cmos(uint8_t reg)
{
	outb(0x70, reg);
	return inb(0x71);
}

static unsigned bcd(uint8_t v, bool binary)
{
	return binary ? v : (v >> 4) * 10 + (v & 15);
}

static uint64_t days_from_civil(unsigned y, unsigned m, unsigned d)
{
	static const unsigned cum[12] = { 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334 };
	uint64_t days = 0;

	for (unsigned yy = 1970; yy < y; yy++)
		days += (yy % 4 == 0 && (yy % 100 != 0 || yy % 400 == 0)) ? 366 : 365;
	days += cum[(m - 1) % 12] + d - 1;
	if (m > 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		days++;
	return days;
}

void rtc_read_boot(void)
{
	uint8_t s, mi, h, d, mo, y, b;
	unsigned spins = 0;
	bool bin;

	/* Not during an update (bit 7 of register A), bounded. */
	while ((cmos(0x0a) & 0x80) && ++spins < 1000000)
		cpu_relax();
	s = cmos(0x00); mi = cmos(0x02); h = cmos(0x04);
	d = cmos(0x07); mo = cmos(0x08); y = cmos(0x09);
	b = cmos(0x0b);
	bin = b & 0x04;
	unsigned hour = bcd(h & 0x7f, bin);
	if (!(b & 0x02) && (h & 0x80))		/* 12-hour clock, PM */
		hour = hour % 12 + 12;
	unsigned year = 2000 + bcd(y, bin);
	unsigned month = bcd(mo, bin), day = bcd(d, bin);

	if (month < 1 || month > 12 || day < 1 || day > 31) {
		log_warn("RTC date %u-%u-%u is not valid; wall clock starts at the epoch", year, month, day);
		boot_secs = 0;
	} else {
		boot_secs = days_from_civil(year, month, day) * 86400 +
			    hour * 3600 + bcd(mi, bin) * 60 + bcd(s, bin);
	}
	boot_tsc = rdtsc();
	log_info("wall clock from the CMOS RTC: %04u-%02u-%02u %02u:%02u:%02u UTC",
		 year, month, day, hour, bcd(mi, bin), bcd(s, bin));
}

uint64_t wallclock_ns(void)
{
	return boot_secs * 1000000000ull + tsc_to_us(rdtsc() - boot_tsc) * 1000ull;
}
